package i2c

import (
	"context"
	"fmt"

	"github.com/promcp/promcp-device/drivers"
)

// MCP23017 registers with IOCON.BANK = 0, the reset layout (Microchip
// DS20001952 table 3-5): each A register is followed by its B register.
const (
	MCPRegIODIR = 0x00 // 1: input (reset 0xFF)
	MCPRegIPOL  = 0x02
	MCPRegIOCON = 0x0A
	MCPRegGPPU  = 0x0C // 1: 100 kΩ pull-up
	MCPRegGPIO  = 0x12 // read: the pins; write: the latch
	MCPRegOLAT  = 0x14
)

// Expander is a GPIO expander on I2C: a Microchip MCP23017 (16 pins,
// A0..A7 = 0..7, B0..B7 = 8..15) or an NXP/TI PCF8574 (8 quasi-bidirectional
// pins). Outputs are the pins given to New; the rest are inputs. It is safe
// for concurrent use: read-modify-write cycles run one at a time.
type Expander struct {
	bus     *Bus
	addr    uint16
	mcp     bool
	outputs uint16 // bit set: output pin
	pullUps uint16 // MCP23017 only
	off     uint16 // MCP23017 only: each output's off level
	// configured: the MCP23017's directions have been written.
	configured bool
	turn       drivers.Turn
	// PCF8574 only: the latch as last written; valid once known.
	latch      uint8
	latchKnown bool
}

// NewMCP23017 returns the expander at addr (0x20..0x27) with outputs,
// pull-ups and the outputs' off levels as bit masks. It does no I/O; the
// directions are written at the first read and before every write, so a
// chip that lost them to a brown-out is set up again (its outputs off).
func NewMCP23017(bus *Bus, addr uint16, outputs, pullUps, off uint16) *Expander {
	return &Expander{bus: bus, addr: addr, mcp: true, outputs: outputs, pullUps: pullUps, off: off & outputs, turn: drivers.NewTurn()}
}

// NewPCF8574 returns the expander at addr (0x20..0x27; PCF8574A 0x38..0x3F)
// with outputs as a bit mask. It does no I/O. Input pins are kept high
// (the weak pull-up on), as the datasheet requires for reading them.
func NewPCF8574(bus *Bus, addr uint16, outputs uint8) *Expander {
	return &Expander{bus: bus, addr: addr, outputs: uint16(outputs), turn: drivers.NewTurn()}
}

func (e *Expander) name() string {
	if e.mcp {
		return "mcp23017"
	}
	return "pcf8574"
}

// lock waits for the expander's turn for op ("read", "write").
func (e *Expander) lock(ctx context.Context, op string) (release func(), err error) {
	release, err = e.turn.Wait(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", e.name(), op, err)
	}
	return release, nil
}

// Levels reads every pin's level (bit n is pin n) and the bytes read: the
// GPIOA and GPIOB registers of an MCP23017, the port of a PCF8574.
func (e *Expander) Levels(ctx context.Context) (uint16, []byte, error) {
	release, err := e.lock(ctx, "read")
	if err != nil {
		return 0, nil, err
	}
	defer release()
	if e.mcp && !e.configured {
		if err := e.setup(ctx, -1, false); err != nil {
			return 0, nil, err
		}
	}
	return e.levels(ctx)
}

func (e *Expander) levels(ctx context.Context) (uint16, []byte, error) {
	if e.mcp {
		b := make([]byte, 2)
		if err := e.bus.Tx(ctx, e.addr, []byte{MCPRegGPIO}, b); err != nil {
			return 0, nil, fmt.Errorf("mcp23017 read GPIO: %w", err)
		}
		return uint16(b[0]) | uint16(b[1])<<8, b, nil
	}
	b := make([]byte, 1)
	if err := e.bus.Tx(ctx, e.addr, nil, b); err != nil {
		return 0, nil, fmt.Errorf("pcf8574 read: %w", err)
	}
	return uint16(b[0]), b, nil
}

// Set drives output pin to high or low and returns every pin's level read
// back after the write. It fails for a pin that is not an output.
func (e *Expander) Set(ctx context.Context, pin int, high bool) (uint16, error) {
	if pin < 0 || pin > 15 || e.outputs&(1<<pin) == 0 {
		return 0, fmt.Errorf("%s: pin %d is not an output", e.name(), pin)
	}
	release, err := e.lock(ctx, "write")
	if err != nil {
		return 0, err
	}
	defer release()
	if e.mcp {
		if err := e.setup(ctx, pin, high); err != nil {
			return 0, err
		}
	} else {
		if !e.latchKnown {
			// The latch cannot be read: a pin reads low when it is driven
			// low. Inputs are kept high.
			lv, _, err := e.levels(ctx)
			if err != nil {
				return 0, err
			}
			e.latch, e.latchKnown = uint8(lv)|^uint8(e.outputs), true
		}
		latch := uint8(setBit(uint16(e.latch), pin, high)) | ^uint8(e.outputs)
		if err := e.bus.Tx(ctx, e.addr, []byte{latch}, nil); err != nil {
			e.latchKnown = false // unknown whether it landed
			return 0, fmt.Errorf("pcf8574 write: %w", err)
		}
		e.latch = latch
	}
	lv, _, err := e.levels(ctx)
	return lv, err
}

// setup writes the MCP23017's latch, directions and pull-ups. A pin that
// is already an output keeps its latched level (a restart does not toggle
// a relay); a pin that becomes one starts at its off level. With pin >= 0,
// that pin's latch is set to high.
func (e *Expander) setup(ctx context.Context, pin int, high bool) error {
	b := make([]byte, 2)
	if err := e.bus.Tx(ctx, e.addr, []byte{MCPRegIODIR}, b); err != nil {
		return fmt.Errorf("mcp23017 read IODIR: %w", err)
	}
	wasOut := ^(uint16(b[0]) | uint16(b[1])<<8) & e.outputs
	if err := e.bus.Tx(ctx, e.addr, []byte{MCPRegOLAT}, b); err != nil {
		return fmt.Errorf("mcp23017 read OLAT: %w", err)
	}
	olat := uint16(b[0]) | uint16(b[1])<<8
	olat = olat&wasOut | e.off&^wasOut
	if pin >= 0 {
		olat = setBit(olat, pin, high)
	}
	// Latch first, then directions: a pin the direction write turns into
	// an output drives the new level, never a stale one.
	if err := e.bus.Tx(ctx, e.addr, []byte{MCPRegOLAT, byte(olat), byte(olat >> 8)}, nil); err != nil {
		return fmt.Errorf("mcp23017 write OLAT: %w", err)
	}
	dir := ^e.outputs
	if err := e.bus.Tx(ctx, e.addr, []byte{MCPRegIODIR, byte(dir), byte(dir >> 8)}, nil); err != nil {
		return fmt.Errorf("mcp23017 write IODIR: %w", err)
	}
	if err := e.bus.Tx(ctx, e.addr, []byte{MCPRegGPPU, byte(e.pullUps), byte(e.pullUps >> 8)}, nil); err != nil {
		return fmt.Errorf("mcp23017 write GPPU: %w", err)
	}
	e.configured = true
	return nil
}

func setBit(v uint16, pin int, on bool) uint16 {
	if on {
		return v | 1<<pin
	}
	return v &^ (1 << pin)
}
