package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/promcp/promcp-device/manifests"
)

// ErrFault is wrapped by the errors of Inject, Clear and Play: the fault
// cannot be injected as asked.
var ErrFault = errors.New("sim: cannot inject fault")

// faultState is an active fault with the state it keeps while active (what
// a stuck device froze, the sign of the next noise spike). Guarded by
// World.mu.
type faultState struct {
	f      manifests.Fault
	device string
	// scheduled faults only: active from start to end (end zero: forever).
	start, end time.Time

	frozen      []byte // stuck I²C device: the bytes it answered first
	frozenValid bool
	frozenPDU   map[string][]byte // stuck Modbus slave: its first answer to each request
	level       bool              // stuck pin: the level it froze at
	levelValid  bool
	flip        bool // noise: the sign of the next spike
	rng         *rand.Rand
}

// Inject starts fault f on the device the manifest calls device, now; it
// replaces any fault injected on that device before, and takes precedence
// over the scenario's. It fails, wrapping ErrFault, for an unknown device
// or a fault that does not apply to its model (manifests.FaultApplies).
//
// Faults act at the bus: the drivers above see exactly what they would see
// from a failing chip or line.
func (w *World) Inject(device string, f manifests.Fault) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkFault(device, f); err != nil {
		return err
	}
	w.advanceLocked()
	w.injected[device] = w.newFaultState(device, f)
	return nil
}

// Clear ends the fault injected on device with Inject, if any: the device
// recovers at once. Faults of a scenario end when the scenario says.
func (w *World) Clear(device string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.injected, device)
}

// Play starts scenario sc on the world's clock now: each fault is active
// from now+At to now+At+For. Faults apply lazily, at the first transaction
// that sees them due, so a clock.Manual drives them exactly. Play replaces
// any scenario played before; it fails, wrapping ErrFault, when a fault
// does not fit the world (ParseScenario with the same manifest has checked
// that already).
func (w *World) Play(sc *manifests.Scenario) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clk.Now()
	var list []*faultState
	for i, sf := range sc.Faults {
		if err := w.checkFault(sf.Device, sf.Fault); err != nil {
			return fmt.Errorf("scenario %s: faults[%d]: %w", sc.Name, i, err)
		}
		fs := w.newFaultState(sf.Device, sf.Fault)
		fs.start = now.Add(sf.At)
		if sf.For > 0 {
			fs.end = fs.start.Add(sf.For)
		}
		list = append(list, fs)
	}
	w.scenario = list
	return nil
}

func (w *World) checkFault(device string, f manifests.Fault) error {
	m, ok := w.models[device]
	if !ok {
		return fmt.Errorf("%w: no device %q in the manifest", ErrFault, device)
	}
	if !manifests.FaultApplies(m, f.Kind) {
		return fmt.Errorf("%w: %s does not apply to %s device %q", ErrFault, f.Kind, m, device)
	}
	return nil
}

func (w *World) newFaultState(device string, f manifests.Fault) *faultState {
	w.faultSeq++
	return &faultState{f: f, device: device, flip: true,
		rng: rand.New(rand.NewPCG(uint64(w.seed), w.faultSeq))}
}

// faultLocked returns the fault active on device at now, or nil: an
// injected one first, then the last scenario fault whose window holds now.
// A scenario fault's state is reset whenever it is not active, so that a
// stuck device that recovers and sticks again freezes anew. w.mu is held.
func (w *World) faultLocked(device string, now time.Time) *faultState {
	if fs, ok := w.injected[device]; ok {
		return fs
	}
	var active *faultState
	for _, fs := range w.scenario {
		if fs.device != device {
			continue
		}
		if !now.Before(fs.start) && (fs.end.IsZero() || now.Before(fs.end)) {
			active = fs
		} else {
			fs.frozenValid, fs.levelValid, fs.frozenPDU = false, false, nil
		}
	}
	return active
}

// delay is how long the fault makes a transaction take, in real time.
func (fs *faultState) delay(busTimeout time.Duration) time.Duration {
	if fs == nil {
		return 0
	}
	switch fs.f.Kind {
	case manifests.FaultSlow:
		if fs.f.Delay > 0 {
			return fs.f.Delay
		}
		return manifests.DefaultSlowDelay
	case manifests.FaultTimeout:
		if fs.f.Delay > 0 {
			return fs.f.Delay
		}
		return 2 * busTimeout
	}
	return 0
}

func (fs *faultState) is(k manifests.FaultKind) bool { return fs != nil && fs.f.Kind == k }

// spike returns the next noise spike: alternating sign, between half and
// all of the amplitude.
func (fs *faultState) spike() float64 {
	a := fs.f.Amplitude
	if a <= 0 {
		a = manifests.DefaultNoiseAmplitude
	}
	s := a * (0.5 + 0.5*fs.rng.Float64())
	if !fs.flip {
		s = -s
	}
	fs.flip = !fs.flip
	return s
}

// distorted returns the engineering value a value fault reports in place
// of v: v plus a spike for noise, the fault's value for implausible. ok is
// false when the reading rails instead (implausible without a value).
func (fs *faultState) distorted(v float64) (out float64, ok bool) {
	switch {
	case fs.is(manifests.FaultNoise):
		return v + fs.spike(), true
	case fs.f.Value != nil:
		return *fs.f.Value, true
	}
	return 0, false
}

// sleep waits d in real time: bus latency is physical, whatever the
// simulated clock does (under testing/synctest it is instant).
func sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	<-t.C
}
