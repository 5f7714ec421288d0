package i2c

import (
	"sync/atomic"
	"testing"

	"periph.io/x/conn/v3/i2c/i2ctest"
	"periph.io/x/conn/v3/physic"
)

// errBus is a bus on which every transaction fails with err.
type errBus struct {
	err   error
	calls atomic.Int32
}

func (b *errBus) String() string                  { return "err" }
func (b *errBus) SetSpeed(physic.Frequency) error { return nil }
func (b *errBus) Tx(uint16, []byte, []byte) error {
	b.calls.Add(1)
	return b.err
}

// stuckBus is a bus whose transactions block until release is closed, then
// fill the read buffer with 0xAA.
type stuckBus struct {
	entered chan struct{} // receives one value per transaction started
	release chan struct{}
	calls   atomic.Int32
}

func newStuckBus() *stuckBus {
	return &stuckBus{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (b *stuckBus) String() string                  { return "stuck" }
func (b *stuckBus) SetSpeed(physic.Frequency) error { return nil }
func (b *stuckBus) Tx(_ uint16, _, r []byte) error {
	b.calls.Add(1)
	b.entered <- struct{}{}
	<-b.release
	for i := range r {
		r[i] = 0xAA
	}
	return nil
}

// playback returns a Playback that returns errors instead of panicking;
// the test fails unless every op was played by the time it ends.
func playback(t *testing.T, ops ...i2ctest.IO) *i2ctest.Playback {
	pb := &i2ctest.Playback{Ops: ops, DontPanic: true}
	t.Cleanup(func() {
		if err := pb.Close(); err != nil {
			t.Error(err)
		}
	})
	return pb
}
