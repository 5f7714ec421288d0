package sim

import (
	"context"
	"fmt"
	"sync"

	"periph.io/x/conn/v3"
	"periph.io/x/conn/v3/physic"
	"periph.io/x/conn/v3/spi"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/adc"
	"github.com/promcp/promcp-device/manifests"
)

// mcp3008 is a simulated MCP3008: eight inputs at fixed voltages (the
// device's sim values, mid-range when absent), converted bit by bit as the chip
// clocks them out. Guarded by World.mu.
type mcp3008 struct {
	name   string
	vref   float64
	inputs [8]float64 // V
	frozen map[byte]uint16
	tx     uint64
}

func addMCP3008(w *World, d manifests.Device, _ *build) error {
	kf := w.files()
	if kf.spi == nil {
		kf.spi = map[string]*mcp3008{}
	}
	if other, dup := kf.spi[d.Bus]; dup {
		return fmt.Errorf("sim: device %s: spi bus %s already has %s", d.Name, d.Bus, other.name)
	}
	c := &mcp3008{name: d.Name, vref: d.VRef}
	if c.vref <= 0 {
		c.vref = manifests.DefaultVRef
	}
	// Mid-range where sim.values says nothing (ADCMid): half the
	// reference, or the middle of an input's scale.
	for i := range c.inputs {
		c.inputs[i] = c.vref / 2
	}
	for _, in := range d.Inputs {
		var ch int
		if _, err := fmt.Sscanf(in.Input, "ch%d", &ch); err == nil && ch >= 0 && ch < 8 {
			c.inputs[ch] = min(ADCMid(in, c.vref), c.vref)
		}
	}
	if d.Sim != nil {
		for i := range c.inputs {
			if v, ok := d.Sim.Values[fmt.Sprintf("ch%d", i)]; ok {
				c.inputs[i] = v
			}
		}
	}
	kf.spi[d.Bus] = c
	return nil
}

// SetInput sets the voltage on input ch (0..7) of the MCP3008 the manifest
// calls device, as a probe would; it fails for an unknown device or input.
func (w *World) SetInput(device string, ch int, volts float64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.kf != nil {
		for _, c := range w.kf.spi {
			if c.name == device && ch >= 0 && ch < 8 {
				c.inputs[ch] = volts
				return nil
			}
		}
	}
	return fmt.Errorf("sim: no mcp3008 %q with input %d", device, ch)
}

// code is what a conversion of config (SGL/DIFF, D2, D1, D0 as four bits)
// gives now, as the active fault distorts it.
func (c *mcp3008) code(config byte, fs *faultState) uint16 {
	n := int(config & 7)
	v := c.inputs[n]
	if config&8 == 0 { // differential: pairs 0-1, 2-3, ...; odd swaps IN+ and IN-
		plus, minus := c.inputs[n&^1], c.inputs[n|1]
		if n&1 == 1 {
			plus, minus = minus, plus
		}
		v = max(0, plus-minus)
	}
	switch {
	case fs.is(manifests.FaultStuck):
		if c.frozen == nil || !fs.frozenValid {
			c.frozen, fs.frozenValid = map[byte]uint16{}, true
		}
		if f, ok := c.frozen[config]; ok {
			return f
		}
		c.frozen[config] = adc.Code(v, c.vref)
		return c.frozen[config]
	case fs.is(manifests.FaultNoise):
		v += fs.spike()
	case fs.is(manifests.FaultImplausible):
		if fs.f.Value == nil {
			return 1023 // railed: an open input floats to the reference
		}
		v = *fs.f.Value
	}
	return adc.Code(v, c.vref)
}

// exchange clocks w through the chip and fills r as it answers (both the
// same length), bit by bit (datasheet Figure 6-1): after the first 1 (the
// start bit) come SGL/DIFF, D2, D1, D0; one clock samples; then the null
// bit (0), B9..B0, then B1..B9 again (LSB first) and zeros. MISO is high
// impedance before the null bit: the simulator reads it as 0. A chip that
// is gone (nack, dropout) leaves MISO pulled high: all ones.
func (c *mcp3008) exchange(w, r []byte, fs *faultState) {
	if fs.is(manifests.FaultNACK) || fs.is(manifests.FaultDropout) {
		for i := range r {
			r[i] = 0xff
		}
		return
	}
	clear(r)
	n := 8 * len(w)
	bit := func(b []byte, i int) byte { return b[i/8] >> (7 - i%8) & 1 }
	start := -1
	for i := range n {
		if bit(w, i) == 1 {
			start = i
			break
		}
	}
	if start < 0 || start+4 >= n {
		return
	}
	var config byte
	for i := 1; i <= 4; i++ {
		config = config<<1 | bit(w, start+i)
	}
	code := c.code(config, fs)
	out := make([]byte, 0, 20)
	out = append(out, 0) // null bit
	for i := 9; i >= 0; i-- {
		out = append(out, byte(code>>i&1))
	}
	for i := 1; i <= 9; i++ {
		out = append(out, byte(code>>i&1))
	}
	for k, b := range out {
		if i := start + 6 + k; i < n && b == 1 {
			r[i/8] |= 0x80 >> (i % 8)
		}
	}
}

// SPI opens the simulated spi bus the manifest calls name.
func (w *World) SPI(ctx context.Context, name string) (spi.PortCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.kf == nil || w.kf.spi[name] == nil {
		return nil, fmt.Errorf("sim spi bus %q: %w: no mcp3008 on it in the manifest", name, drivers.ErrUnavailable)
	}
	return &spiPort{w: w, bus: name}, nil
}

// SPITransactions returns the number of transactions on the spi bus name.
func (w *World) SPITransactions(name string) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.kf != nil && w.kf.spi[name] != nil {
		return w.kf.spi[name].tx
	}
	return 0
}

type spiPort struct {
	w      *World
	bus    string
	mu     sync.Mutex
	closed bool
}

func (p *spiPort) String() string                    { return "sim-spi-" + p.bus }
func (p *spiPort) LimitSpeed(physic.Frequency) error { return nil }
func (p *spiPort) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	return nil
}

// Connect implements spi.Port: the MCP3008 speaks mode 0 (or 3) with 8-bit
// words.
func (p *spiPort) Connect(f physic.Frequency, mode spi.Mode, bits int) (spi.Conn, error) {
	if mode&3 != spi.Mode0 && mode&3 != spi.Mode3 || bits != 8 {
		return nil, fmt.Errorf("sim spi: mode %v with %d bits: the MCP3008 speaks mode 0 or 3, 8 bits", mode, bits)
	}
	return &spiConn{p: p}, nil
}

type spiConn struct{ p *spiPort }

func (c *spiConn) String() string       { return c.p.String() }
func (c *spiConn) Duplex() conn.Duplex  { return conn.Full }
func (c *spiConn) Tx(w, r []byte) error { return c.TxPackets([]spi.Packet{{W: w, R: r}}) }
func (c *spiConn) TxPackets(ps []spi.Packet) error {
	c.p.mu.Lock()
	closed := c.p.closed
	c.p.mu.Unlock()
	if closed {
		return fmt.Errorf("sim spi: %w: port closed", drivers.ErrUnavailable)
	}
	for _, p := range ps {
		if len(p.W) != len(p.R) {
			return fmt.Errorf("sim spi: full duplex needs equal buffers, got %d and %d", len(p.W), len(p.R))
		}
		w := c.p.w
		w.mu.Lock()
		chip := w.kf.spi[c.p.bus]
		chip.tx++
		chip.exchange(p.W, p.R, w.faultLocked(chip.name, w.clk.Now()))
		w.mu.Unlock()
	}
	return nil
}
