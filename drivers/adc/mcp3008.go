// Package adc reads the Microchip MCP3008, a 10-bit, 8-channel ADC on SPI
// (dtparam=spi=on on a Raspberry Pi: /dev/spidev0.0 on CE0). periph.io has
// no MCP3008 driver; the protocol is one three-byte transaction.
package adc

import (
	"context"
	"fmt"
	"sync"

	"periph.io/x/conn/v3/spi"

	"github.com/promcp/promcp-device/drivers"
)

// MaxSpeed is the MCP3008's fastest SPI clock at 2.7 V, in Hz (datasheet
// Table 1-1: 1.35 MHz at 2.7 V, 3.6 MHz at 5 V).
const MaxSpeed = 1350000

// Request is the three bytes that start a conversion of input config
// (0..7) single-ended, or of differential pair config when diff is true
// (datasheet Figure 6-1 and Table 5-2): a start bit, then SGL/DIFF, D2, D1,
// D0 in the high nibble of the second byte, then eight clocks to read.
func Request(config int, diff bool) [3]byte {
	sgl := byte(0x80)
	if diff {
		sgl = 0
	}
	return [3]byte{0x01, sgl | byte(config&7)<<4, 0x00}
}

// Decode returns the 10-bit code of a reply: the null bit (bit 2 of the
// second byte) must be 0, B9 B8 are its low two bits and the third byte is
// B7..B0. A reply with the null bit set (a MISO line pulled high: no chip
// answering) wraps drivers.ErrNACK.
func Decode(r [3]byte) (uint16, error) {
	if r[1]&0x04 != 0 {
		return 0, fmt.Errorf("%w: reply % x has the null bit set (MISO high: is the MCP3008 wired and powered?)", drivers.ErrNACK, r[:])
	}
	return uint16(r[1]&0x03)<<8 | uint16(r[2]), nil
}

// Reply is what an MCP3008 sends for code: the first byte undefined (0
// here), the null bit 0, then the ten bits.
func Reply(code uint16) [3]byte {
	return [3]byte{0x00, byte(code>>8) & 0x03, byte(code)}
}

// Volts is code's voltage at reference vref.
func Volts(code uint16, vref float64) float64 { return float64(code) * vref / 1024 }

// Code is the code the MCP3008 gives for v volts at vref, clamped to
// 0..1023.
func Code(v, vref float64) uint16 {
	c := int(v * 1024 / vref)
	return uint16(max(0, min(1023, c)))
}

// MCP3008 is one chip on one chip select.
type MCP3008 struct {
	conn spi.Conn
	mu   sync.Mutex
}

// NewMCP3008 returns the chip on conn. It does no I/O.
func NewMCP3008(conn spi.Conn) *MCP3008 { return &MCP3008{conn: conn} }

// Read converts input config (differential pair when diff) and returns
// the code and the reply's three bytes.
func (m *MCP3008) Read(ctx context.Context, config int, diff bool) (uint16, [3]byte, error) {
	if err := ctx.Err(); err != nil {
		return 0, [3]byte{}, drivers.Classify(err)
	}
	w := Request(config, diff)
	var r [3]byte
	m.mu.Lock()
	err := m.conn.Tx(w[:], r[:])
	m.mu.Unlock()
	if err != nil {
		return 0, r, fmt.Errorf("mcp3008: %w", drivers.Classify(err))
	}
	code, err := Decode(r)
	return code, r, err
}
