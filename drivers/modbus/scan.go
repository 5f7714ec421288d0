package modbus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
)

// ScanConfig bounds a scan. Zero values mean the documented defaults.
type ScanConfig struct {
	// Units are the unit ids to probe; nil means 1..247.
	Units []uint8
	// First and Count bound the addresses probed in each table; Count 0
	// means 32 from First.
	First, Count uint16
	// Pause is kept between probes so that a scan never floods a line
	// that is in use; it is waited on the Line's clock. Default 20ms.
	Pause time.Duration
}

// Range is a run of readable addresses in one table.
type Range struct {
	Table       modbusconf.Table
	First, Last uint16
}

func (r Range) String() string {
	if r.First == r.Last {
		return fmt.Sprintf("%s %d", r.Table, r.First)
	}
	return fmt.Sprintf("%s %d-%d", r.Table, r.First, r.Last)
}

// UnitReport is what a scan found at one unit id.
type UnitReport struct {
	Unit   uint8
	Ranges []Range
}

// Scan probes the line for units that answer and, for each, the addresses
// from First to First+Count-1 that can be read in each of the four tables,
// one address per request with function codes 1 to 4 only: it never
// writes. A unit answers when it sends data or an exception other than the
// gateway exceptions (10, 11); a unit that times out is skipped after one
// probe. Use a Line with Retries 0 and a short Timeout for a quick scan.
// Scan stops with ctx's error when ctx ends.
func (l *Line) Scan(ctx context.Context, cfg ScanConfig) ([]UnitReport, error) {
	units := cfg.Units
	if units == nil {
		for u := 1; u <= 247; u++ {
			units = append(units, uint8(u))
		}
	}
	if cfg.Count == 0 {
		cfg.Count = 32
	}
	if cfg.Pause <= 0 {
		cfg.Pause = 20 * time.Millisecond
	}
	pause := func() error { return clock.Sleep(ctx, l.cfg.Clock, cfg.Pause) }
	var found []UnitReport
	for _, id := range units {
		u := l.Unit(id)
		alive := false
		var ranges []Range
		for _, table := range []modbusconf.Table{modbusconf.TableHolding, modbusconf.TableInput, modbusconf.TableCoil, modbusconf.TableDiscrete} {
			var cur *Range
		probe:
			for i := range int(cfg.Count) {
				addr := cfg.First + uint16(i)
				if int(cfg.First)+i > 0xFFFF {
					break
				}
				if err := pause(); err != nil {
					return found, err
				}
				var err error
				if table.IsBits() {
					_, err = u.ReadBits(ctx, table, addr, 1)
				} else {
					_, err = u.ReadRegisters(ctx, table, addr, 1)
				}
				if ctx.Err() != nil {
					return found, ctx.Err()
				}
				ex, isEx := errors.AsType[*ExceptionError](err)
				switch {
				case err == nil:
					alive = true
					if cur != nil && cur.Last+1 == addr {
						cur.Last = addr
					} else {
						ranges = append(ranges, Range{Table: table, First: addr, Last: addr})
						cur = &ranges[len(ranges)-1]
					}
					continue
				case isEx && ex.Code != ExceptionGatewayPath && ex.Code != ExceptionGatewayTargetFailed:
					alive = true
					if ex.Code == ExceptionIllegalFunction {
						break probe // the table does not exist here
					}
				case !alive:
					break probe // nobody there
				}
				cur = nil
			}
			if !alive {
				break
			}
		}
		if alive {
			found = append(found, UnitReport{Unit: id, Ranges: ranges})
		}
	}
	return found, nil
}
