//go:build linux

package sim

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// PTY is a pseudo-terminal pair: the simulator serves RTU on the master
// side, and a driver opens SlavePath exactly as it would open /dev/ttyUSB0.
type PTY struct {
	master *os.File
	slave  *os.File // held open so the master never reads EIO between clients
	// SlavePath is the device path of the terminal side, /dev/pts/N.
	SlavePath string
}

// OpenPTY opens a new pseudo-terminal in raw mode.
func OpenPTY() (*PTY, error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sim pty: %w", err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("sim pty: unlock: %w", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("sim pty: number: %w", err)
	}
	path := "/dev/pts/" + strconv.FormatUint(uint64(n), 10)
	master := os.NewFile(uintptr(fd), "/dev/ptmx")
	sfd, err := unix.Open(path, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		master.Close()
		return nil, fmt.Errorf("sim pty: open %s: %w", path, err)
	}
	t, err := unix.IoctlGetTermios(sfd, unix.TCGETS)
	if err == nil {
		// cfmakeraw
		t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
		t.Oflag &^= unix.OPOST
		t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
		t.Cflag &^= unix.CSIZE | unix.PARENB
		t.Cflag |= unix.CS8
		t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
		err = unix.IoctlSetTermios(sfd, unix.TCSETS, t)
	}
	if err != nil {
		unix.Close(sfd)
		master.Close()
		return nil, fmt.Errorf("sim pty: raw mode: %w", err)
	}
	return &PTY{master: master, slave: os.NewFile(uintptr(sfd), path), SlavePath: path}, nil
}

// Master returns the controlling side, which reads what the driver writes.
func (p *PTY) Master() *os.File { return p.master }

// Close closes both sides; a ServeRTU on the master returns.
func (p *PTY) Close() error {
	err := p.master.Close()
	p.slave.Close()
	return err
}
