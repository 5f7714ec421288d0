//go:build !linux

package chardev

import (
	"errors"
	"fmt"
	"os"
)

type osSys struct{}

var errNotLinux = fmt.Errorf("the GPIO character device: %w: Linux only", errors.ErrUnsupported)

func (osSys) open(string) (int, error)           { return -1, errNotLinux }
func (osSys) close(int) error                    { return errNotLinux }
func (osSys) ioctl(int, uintptr, any) error      { return errNotLinux }
func (osSys) file(int, string) (*os.File, error) { return nil, errNotLinux }
