// Package audittest tests what a full disk does: a test double for the
// audit log's file seam, a disk that fills up on demand, so that full-disk
// behaviour is tested everywhere, without mounting a small file system;
// and, where a test may mount one, a real small tmpfs and a way to fill it.
package audittest

import (
	"errors"
	"os"
	"sync/atomic"

	"github.com/promcp/promcp-device/audit"
)

// ErrNoSpace is the error a write to a full [Disk] fails with (inside an
// *os.PathError).
var ErrNoSpace = errors.New("no space left on device")

// Disk opens real files whose writes fail while the disk is full: each
// write then writes half of its bytes and fails with ErrNoSpace, as a
// filling disk does. The zero Disk has space.
type Disk struct{ full atomic.Bool }

// SetFull makes the disk full (true) or gives the space back (false).
func (d *Disk) SetFull(full bool) { d.full.Store(full) }

// OpenFile is an [audit.Options] OpenFile on the disk.
func (d *Disk) OpenFile(name string, flag int, perm os.FileMode) (audit.File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return file{f, d}, nil
}

type file struct {
	*os.File
	d *Disk
}

func (f file) WriteAt(b []byte, off int64) (int, error) {
	if f.d.full.Load() {
		n, _ := f.File.WriteAt(b[:len(b)/2], off)
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: ErrNoSpace}
	}
	return f.File.WriteAt(b, off)
}
