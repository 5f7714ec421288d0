package capabilities

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	pgpio "periph.io/x/conn/v3/gpio"

	"github.com/promcp/promcp-device/driverconf"
	"github.com/promcp/promcp-device/drivers/pulse"
	"github.com/promcp/promcp-device/manifests"
)

// openPulseCounter counts the edges of a GPIO input (a flow meter, a rain
// gauge), debounced. Channels: total (pulses × per_pulse since the count
// began), rate (per second, averaged over the last minute) and
// rate_per_minute. Read-only. With a state directory the total is kept in
// <state>/pulses/<device>.total, replaced atomically at most once a second
// and on close, so a restart goes on from it (losing at most the last
// second's pulses after a crash). Simulated by sim's pulse pin, which makes
// edges at a rate on the simulated clock. The grounds of a reading are the
// pulse count in decimal.
func openPulseCounter(ctx context.Context, pin pgpio.PinIO, d manifests.Device, e env) (*device, error) {
	edge := pgpio.FallingEdge
	switch d.Edge {
	case manifests.EdgeRising:
		edge = pgpio.RisingEdge
	case manifests.EdgeBoth:
		edge = pgpio.BothEdges
	}
	var store *pulse.File
	if e.stateDir != "" {
		store = &pulse.File{Path: filepath.Join(e.stateDir, "pulses", d.Name+".total")}
	} else {
		e.log.Warn("no --state: the pulse total starts from 0 at every start")
	}
	pull, err := driverconf.Pull(d.Pull).Periph()
	if err != nil {
		return nil, err
	}
	c := pulse.New(pin, pulse.Config{Pull: pull, Edge: edge, Debounce: d.Debounce,
		Store: store, Clock: e.clock, Log: e.log})
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	e.closers(c.Close)
	per := d.PerPulse
	if per <= 0 {
		per = 1
	}
	return &device{
		model: d.Model,
		source: perChannel(e.clock, func(channel string, t manifests.ValueType) readFunc {
			return func(ctx context.Context) (any, []byte, error) {
				if err := ctx.Err(); err != nil {
					return nil, nil, err
				}
				n, rate := c.Snapshot(e.clock.Now())
				raw := strconv.AppendUint(nil, n, 10)
				switch channel {
				case "total":
					return numeric(round(float64(n)*per, 6), t), raw, nil
				case "rate_per_minute":
					return numeric(round(rate*60*per, 6), t), raw, nil
				}
				return numeric(round(rate*per, 6), t), raw, nil
			}
		}),
		writer: noWriter(d.Model),
		bind: func(channel string) Binding {
			conv := fmt.Sprintf("count × %g", per)
			switch channel {
			case "rate":
				conv = fmt.Sprintf("pulses in the last minute / 60 s × %g", per)
			case "rate_per_minute":
				conv = fmt.Sprintf("pulses in the last minute × %g", per)
			}
			return Binding{Driver: "gpio", Address: "pin " + d.Pin, Register: channel,
				RawForm: "the pulse count (decimal)", Conversion: conv + fmt.Sprintf(", %s edges, debounced %s", d.Edge, d.Debounce)}
		},
	}, nil
}
