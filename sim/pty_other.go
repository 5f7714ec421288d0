//go:build !linux

package sim

import (
	"errors"
	"os"
)

// PTY is a pseudo-terminal pair; only Linux has one here.
type PTY struct {
	SlavePath string
}

// OpenPTY fails outside Linux.
func OpenPTY() (*PTY, error) { return nil, errors.New("sim pty: needs Linux") }

// Master returns nil.
func (p *PTY) Master() *os.File { return nil }

// Close does nothing.
func (p *PTY) Close() error { return nil }
