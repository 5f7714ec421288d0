//go:build linux

package chardev

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

type osSys struct{}

func (osSys) open(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

func (osSys) close(fd int) error { return unix.Close(fd) }

func (osSys) ioctl(fd int, req uintptr, arg any) error {
	var p unsafe.Pointer
	switch a := arg.(type) {
	case *lineRequest:
		p = unsafe.Pointer(a)
	case *lineConfig:
		p = unsafe.Pointer(a)
	case *lineValues:
		p = unsafe.Pointer(a)
	default:
		return fmt.Errorf("ioctl: unexpected argument %T", arg)
	}
	for {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(p))
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		}
		return errno
	}
}

func (osSys) file(fd int, name string) (*os.File, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), "gpio line "+name), nil
}
