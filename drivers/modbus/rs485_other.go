//go:build !linux

package modbus

import "errors"

func enableRS485(string) error {
	return errors.New("kernel RS-485 mode needs Linux (TIOCSRS485); use rs485: rts or none")
}
