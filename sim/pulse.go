package sim

import (
	"fmt"
	"math"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"

	"github.com/promcp/promcp-device/manifests"
)

// pulseSource is the simulated sensor behind a pulse_counter's pin: it
// makes edges at a rate (pulses per second, the device's sim value "rate",
// or SetPulseRate), on the world's clock. Guarded by World.mu.
type pulseSource struct {
	p         *pinState
	rate      float64   // pulses per second
	phase     float64   // pulses made, fractional
	at        time.Time // when phase was last advanced
	delivered int64     // pulses whose edges were handed to WaitForEdge
	burst     int       // edges of the last pulse still to hand out
	edge      pgpio.Edge
}

func addPulseCounter(w *World, d manifests.Device, bl *build) error {
	if err := addPin(w, d, bl); err != nil {
		return err
	}
	kf := w.files()
	if kf.pulses == nil {
		kf.pulses = map[string]*pulseSource{}
	}
	s := &pulseSource{p: w.pins[d.Pin], at: bl.now}
	if d.Sim != nil {
		s.rate = d.Sim.Values["rate"]
	}
	kf.pulses[d.Pin] = s
	return nil
}

// SetPulseRate sets the pulses per second the sensor on the pulse_counter
// device makes from now on (a flow changing).
func (w *World) SetPulseRate(device string, hz float64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.kf != nil {
		for _, s := range w.kf.pulses {
			if s.p.device == device {
				s.advance(w.clk.Now(), nil)
				s.rate = hz
				return nil
			}
		}
	}
	return fmt.Errorf("sim: no pulse_counter %q", device)
}

// advance makes the pulses due up to now; a stuck line makes none.
func (s *pulseSource) advance(now time.Time, fs *faultState) {
	if now.After(s.at) {
		if !fs.is(manifests.FaultStuck) {
			s.phase += now.Sub(s.at).Seconds() * s.rate
		}
		s.at = now
	}
}

// next hands out the next due edge, if any: each pulse is one edge, two
// with both edges, and, under a noise fault, each edge bounces twice.
func (s *pulseSource) next(fs *faultState) bool {
	if s.burst > 0 {
		s.burst--
		return true
	}
	// The phase is a sum of steps: a pulse due at exactly now must not be
	// lost to rounding.
	if int64(math.Floor(s.phase+1e-9)) <= s.delivered {
		return false
	}
	s.delivered++
	per := 1
	if s.edge == pgpio.BothEdges {
		per = 2
	}
	if fs.is(manifests.FaultNoise) {
		per *= 3
	}
	s.burst = per - 1
	return true
}

// pulsePin is the pin of a pulse_counter: a sim Pin that detects edges.
type pulsePin struct {
	*Pin
	s *pulseSource
}

func (w *World) pulsePin(name string) pgpio.PinIO {
	if w.kf == nil || w.kf.pulses[name] == nil {
		return nil
	}
	s := w.kf.pulses[name]
	return &pulsePin{Pin: &Pin{w: w, p: s.p}, s: s}
}

// In implements gpio.PinIn, with edge detection.
func (p *pulsePin) In(pull pgpio.Pull, edge pgpio.Edge) error {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	now := p.w.advanceLocked()
	p.s.advance(now, p.w.faultLocked(p.p.device, now))
	p.p.output = false
	if pull != pgpio.PullNoChange {
		p.p.pull = pull
	}
	p.s.edge = edge
	// Edges before In are not seen.
	p.s.delivered, p.s.burst = int64(math.Floor(p.s.phase+1e-9)), 0
	return nil
}

// WaitForEdge implements gpio.PinIn: true while edges are due on the
// world's clock, each pulse at its own instant (waiting on the world's
// clock for the next one, so that a counter sees a fast meter's pulses
// apart and not as one burst its debounce would drop), else false after
// timeout (at most 100ms) of real time.
func (p *pulsePin) WaitForEdge(timeout time.Duration) bool {
	p.w.mu.Lock()
	now := p.w.clk.Now()
	fs := p.w.faultLocked(p.p.device, now)
	p.s.advance(now, fs)
	if p.s.edge == pgpio.NoEdge {
		p.w.mu.Unlock()
		sleep(min(max(timeout, 0), 100*time.Millisecond))
		return false
	}
	if p.s.next(fs) {
		p.w.mu.Unlock()
		return true
	}
	if timeout < 0 || timeout > 100*time.Millisecond {
		timeout = 100 * time.Millisecond
	}
	// Wait on the world's clock only for a pulse due within this poll: a
	// wait far ahead (a rain gauge's next tip) would sit on a driven clock
	// as if the caller waited for it, and a site test's runner advances
	// the clock to the waits it finds.
	var due <-chan time.Time
	if d, ok := p.s.untilNext(fs); ok && d <= timeout {
		due = p.w.clk.After(d)
	}
	p.w.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-due:
		p.w.mu.Lock()
		defer p.w.mu.Unlock()
		now := p.w.clk.Now()
		fs := p.w.faultLocked(p.p.device, now)
		p.s.advance(now, fs)
		return p.s.next(fs)
	case <-t.C:
		return false
	}
}

// untilNext returns how long on the world's clock until the next pulse is
// due, and false when none is coming (no rate, or the line is stuck).
func (s *pulseSource) untilNext(fs *faultState) (time.Duration, bool) {
	if s.rate <= 0 || fs.is(manifests.FaultStuck) {
		return 0, false
	}
	need := float64(s.delivered+1) - s.phase
	return time.Duration(math.Ceil(max(need, 0) / s.rate * float64(time.Second))), true
}
