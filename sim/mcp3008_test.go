package sim_test

import (
	"testing"

	"periph.io/x/conn/v3/physic"
	"periph.io/x/conn/v3/spi"

	"github.com/promcp/promcp-device/drivers/adc"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/sim"
)

const adcManifest = `version: 1
gateway: g
buses:
  - {name: spi0, kind: spi, device: /dev/spidev0.0}
devices:
  - name: soil_adc
    bus: spi0
    model: mcp3008
    vref: 3.3
    sim:
      values: {ch0: 1.65, ch1: 0.5, ch2: 3.3, ch7: 0.0032}
capabilities:
  - {name: soil, type: number, unit: V, read: {device: soil_adc, channel: ch0}}
`

func adcConn(t *testing.T) (*sim.World, spi.Conn) {
	t.Helper()
	w, _ := newWorld(t, manifesttest.Parse(t, "adc.yml", adcManifest))
	p, err := w.SPI(t.Context(), "spi0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Connect(adc.MaxSpeed*physic.Hertz, spi.Mode0, 8)
	if err != nil {
		t.Fatal(err)
	}
	return w, c
}

// The simulated chip answers the datasheet's frames byte for byte, and
// the driver reads it.
func TestMCP3008Frames(t *testing.T) {
	_, c := adcConn(t)
	for _, tc := range []struct {
		w, want []byte
	}{
		{[]byte{0x01, 0x80, 0x00}, []byte{0x00, 0x02, 0x00}}, // CH0 1.65 V: 512
		{[]byte{0x01, 0x90, 0x00}, []byte{0x00, 0x00, 0x9b}}, // CH1 0.5 V: 155
		{[]byte{0x01, 0xa0, 0x00}, []byte{0x00, 0x03, 0xff}}, // CH2 at Vref: 1023
		{[]byte{0x01, 0x00, 0x00}, []byte{0x00, 0x01, 0x64}}, // CH0-CH1: 1.15 V: floor(1024 × 1.15 / 3.3) = 356
		{[]byte{0x01, 0x10, 0x00}, []byte{0x00, 0x00, 0x00}}, // CH1-CH0: negative reads 0
		{[]byte{0x01, 0xf0, 0x00}, []byte{0x00, 0x00, 0x00}}, // CH7 3.2 mV: below 1 LSB
		// Start bit one clock later: the answer shifts with it (512: B9
		// lands in bit 0 of the second byte).
		{[]byte{0x00, 0xc0, 0x00, 0x00}, []byte{0x00, 0x01, 0x00, 0x00}},
		// With a fourth byte the chip goes on LSB first: B1..B8 of 155
		// (0b0010011011) are 1 0 1 1 0 0 1 0.
		{[]byte{0x01, 0x90, 0x00, 0x00}, []byte{0x00, 0x00, 0x9b, 0xb2}},
	} {
		r := make([]byte, len(tc.w))
		if err := c.Tx(tc.w, r); err != nil {
			t.Fatal(err)
		}
		if string(r) != string(tc.want) {
			t.Errorf("Tx(% x) = % x, want % x", tc.w, r, tc.want)
		}
	}
	chip := adc.NewMCP3008(c)
	code, _, err := chip.Read(t.Context(), 1, false)
	if err != nil || code != 155 || adc.Volts(code, 3.3) < 0.499 || adc.Volts(code, 3.3) > 0.5 {
		t.Fatalf("Read(CH1) = %d, %v", code, err)
	}
}

func TestMCP3008Faults(t *testing.T) {
	w, c := adcConn(t)
	chip := adc.NewMCP3008(c)
	if err := w.Inject("soil_adc", manifests.Fault{Kind: manifests.FaultNACK}); err != nil {
		t.Fatal(err)
	}
	if _, raw, err := chip.Read(t.Context(), 0, false); err == nil || raw != [3]byte{0xff, 0xff, 0xff} {
		t.Fatalf("nack: % x %v, want MISO high and an error", raw, err)
	}
	if err := w.Inject("soil_adc", manifests.Fault{Kind: manifests.FaultImplausible}); err != nil {
		t.Fatal(err)
	}
	if code, _, err := chip.Read(t.Context(), 1, false); err != nil || code != 1023 {
		t.Fatalf("implausible: %d %v, want railed 1023", code, err)
	}
	if err := w.Inject("soil_adc", manifests.Fault{Kind: manifests.FaultCRC}); err == nil {
		t.Fatal("a crc fault on SPI was accepted")
	}
	w.Clear("soil_adc")
	if err := w.SetInput("soil_adc", 1, 2.0); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := chip.Read(t.Context(), 1, false); code != 620 {
		t.Fatalf("after SetInput(2.0 V): %d, want 620", code)
	}
}
