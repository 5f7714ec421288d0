package chardev

import "os"

// sys is the kernel as a Line sees it; tests replace it with a fake chip.
type sys interface {
	open(path string) (int, error)
	close(fd int) error
	// ioctl passes arg, a pointer to one of the uAPI structures.
	ioctl(fd int, req uintptr, arg any) error
	// file wraps a line request fd for reading edge events with deadlines.
	file(fd int, name string) (*os.File, error)
}
