//go:build linux

package modbus

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// serialRS485 is struct serial_rs485 from <linux/serial.h>: the same
// 32-byte layout on 32- and 64-bit ARM.
type serialRS485 struct {
	Flags              uint32
	DelayRTSBeforeSend uint32
	DelayRTSAfterSend  uint32
	Padding            [5]uint32
}

// Flags of serial_rs485.
const (
	rs485Enabled     = 1 << 0
	rs485RTSOnSend   = 1 << 1
	rs485RTSAfterSnd = 1 << 2
)

// enableRS485 switches the UART behind path into the kernel's RS-485 mode:
// RTS high while sending, low after. The setting belongs to the port, so it
// outlives this short-lived descriptor.
func enableRS485(path string) error {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	conf := serialRS485{Flags: rs485Enabled | rs485RTSOnSend}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.TIOCSRS485), uintptr(unsafe.Pointer(&conf)))
	if errno != 0 {
		return errno
	}
	return nil
}
