// Package sysfs reads and writes the kernel's attribute files (the w1 and
// pwm classes) under a root directory. The simulator serves the same files
// from a directory of its own, so drivers read them as they would on a Pi.
package sysfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/promcp/promcp-device/drivers"
)

// FS is a tree of attribute files, named relative to its root with
// forward slashes ("28-0316a2795aff/w1_slave").
type FS interface {
	// ReadFile returns the content of the attribute name.
	ReadFile(ctx context.Context, name string) ([]byte, error)
	// WriteFile writes data to the existing attribute name, as echo does.
	WriteFile(ctx context.Context, name string, data []byte) error
}

// Dir is the FS of the files under a directory on disk.
type Dir string

// path resolves name under d, refusing names that climb out of it.
func (d Dir) path(name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", fmt.Errorf("sysfs: %q is not a path under %s", name, string(d))
	}
	return filepath.Join(string(d), filepath.FromSlash(name)), nil
}

// ReadFile implements FS. A file that does not exist wraps
// drivers.ErrUnavailable.
func (d Dir) ReadFile(ctx context.Context, name string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, drivers.Classify(err)
	}
	p, err := d.path(name)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, classify(err)
	}
	return b, nil
}

// WriteFile implements FS: it opens the existing file for writing (never
// creating one: a sysfs attribute that is missing is a missing device) and
// writes data in one write, as the kernel wants.
func (d Dir) WriteFile(ctx context.Context, name string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return drivers.Classify(err)
	}
	p, err := d.path(name)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return classify(err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("write %q to %s: %w", strings.TrimSpace(string(data)), p, drivers.Classify(err))
	}
	return nil
}

func classify(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %w", drivers.ErrUnavailable, err)
	}
	return drivers.Classify(err)
}
