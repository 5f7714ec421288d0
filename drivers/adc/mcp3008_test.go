package adc

import (
	"context"
	"errors"
	"testing"

	"periph.io/x/conn/v3/conntest"
	"periph.io/x/conn/v3/physic"
	"periph.io/x/conn/v3/spi"
	"periph.io/x/conn/v3/spi/spitest"

	"github.com/promcp/promcp-device/drivers"
)

// Frames from the datasheet (Figure 6-1, Table 5-2).
func TestRequestFrames(t *testing.T) {
	for _, c := range []struct {
		config int
		diff   bool
		want   [3]byte
	}{
		{0, false, [3]byte{0x01, 0x80, 0x00}}, // single-ended CH0
		{7, false, [3]byte{0x01, 0xf0, 0x00}}, // single-ended CH7
		{0, true, [3]byte{0x01, 0x00, 0x00}},  // CH0 = IN+, CH1 = IN-
		{3, true, [3]byte{0x01, 0x30, 0x00}},  // CH2 = IN-, CH3 = IN+
	} {
		if got := Request(c.config, c.diff); got != c.want {
			t.Errorf("Request(%d, %v) = % x, want % x", c.config, c.diff, got, c.want)
		}
	}
}

func TestDecodeFrames(t *testing.T) {
	for _, c := range []struct {
		r    [3]byte
		want uint16
		err  error
	}{
		{[3]byte{0x00, 0x03, 0xff}, 1023, nil},
		{[3]byte{0x00, 0x02, 0x00}, 512, nil},
		{[3]byte{0xff, 0xf8, 0x01}, 1, nil}, // undefined high bits ignored
		{[3]byte{0xff, 0xff, 0xff}, 0, drivers.ErrNACK},
	} {
		got, err := Decode(c.r)
		if got != c.want || !errors.Is(err, c.err) {
			t.Errorf("Decode(% x) = %d, %v; want %d, %v", c.r, got, err, c.want, c.err)
		}
	}
	if v := Volts(512, 3.3); v != 1.65 {
		t.Errorf("Volts(512, 3.3) = %g", v)
	}
	if Code(5, 3.3) != 1023 || Code(-1, 3.3) != 0 || Code(1.65, 3.3) != 512 {
		t.Error("Code does not clamp or convert")
	}
}

// The driver against periph's recorded SPI conversation: the exact bytes
// on the wire.
func TestReadPlaysback(t *testing.T) {
	pb := &spitest.Playback{Playback: conntest.Playback{Ops: []conntest.IO{
		{W: []byte{0x01, 0xa0, 0x00}, R: []byte{0x00, 0x01, 0x9a}},
	}}}
	conn, err := pb.Connect(MaxSpeed*physic.Hertz, spi.Mode0, 8)
	if err != nil {
		t.Fatal(err)
	}
	code, raw, err := NewMCP3008(conn).Read(context.Background(), 2, false)
	if err != nil || code != 0x19a || raw != [3]byte{0x00, 0x01, 0x9a} {
		t.Fatalf("Read = %d % x %v", code, raw, err)
	}
	if err := pb.Close(); err != nil {
		t.Fatal(err)
	}
}
