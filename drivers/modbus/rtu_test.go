package modbus

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
)

// recordingPort is a serial port that records direction control and
// answers every request with reply.
type recordingPort struct {
	events []string
	reply  []byte
	out    bytes.Buffer
	in     *bytes.Reader
	// waits, when set, records each read timeout set as "wait" (up to
	// short) or "long wait".
	waits bool
	short time.Duration
}

func (p *recordingPort) Write(b []byte) (int, error) {
	p.events = append(p.events, "write")
	p.out.Write(b)
	p.in = bytes.NewReader(p.reply)
	return len(b), nil
}

func (p *recordingPort) Read(b []byte) (int, error) {
	if p.in == nil || p.in.Len() == 0 {
		return 0, nil // a timeout, as go.bug.st/serial reports one
	}
	return p.in.Read(b)
}

func (p *recordingPort) SetReadTimeout(d time.Duration) error {
	if p.waits {
		p.events = append(p.events, map[bool]string{true: "wait", false: "long wait"}[d <= p.short])
	}
	return nil
}
func (p *recordingPort) Close() error { return nil }
func (p *recordingPort) SetRTS(on bool) error {
	p.events = append(p.events, map[bool]string{true: "rts on", false: "rts off"}[on])
	return nil
}
func (p *recordingPort) Drain() error            { p.events = append(p.events, "drain"); return nil }
func (p *recordingPort) ResetInputBuffer() error { p.events = append(p.events, "flush"); return nil }

// TestRTUFramesAndRTSDirection: the request on the wire is the RTU frame
// with its CRC; with RTS direction control RTS is high exactly while the
// frame leaves the UART; without it RTS is never touched.
func TestRTUFramesAndRTSDirection(t *testing.T) {
	for _, tc := range []struct {
		name string
		rts  bool
		want []string
	}{
		{"rts", true, []string{"flush", "rts on", "write", "drain", "rts off"}},
		{"none", false, []string{"flush", "write"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &recordingPort{reply: AppendCRC([]byte{1, 3, 2, 0, 7})}
			line := NewRTU(Config{Name: "rs485", Timeout: 50 * time.Millisecond}, p, 0, tc.rts, nil)
			b, err := line.Unit(1).ReadRegisters(context.Background(), modbusconf.TableHolding, 0, 1)
			if err != nil || !bytes.Equal(b, []byte{0, 7}) {
				t.Fatalf("ReadRegisters = % x, %v", b, err)
			}
			if want := AppendCRC([]byte{1, 3, 0, 0, 0, 1}); !bytes.Equal(p.out.Bytes(), want) {
				t.Errorf("on the wire: % x, want % x", p.out.Bytes(), want)
			}
			if !slices.Equal(p.events, tc.want) {
				t.Errorf("events = %v, want %v", p.events, tc.want)
			}
		})
	}
	// A silent device times out, and stale input is flushed before each
	// request.
	p := &recordingPort{}
	line := NewRTU(Config{Name: "rs485", Timeout: 20 * time.Millisecond}, p, 0, false, nil)
	if _, err := line.Unit(1).ReadRegisters(context.Background(), modbusconf.TableHolding, 0, 1); !errors.Is(err, drivers.ErrTimeout) {
		t.Fatalf("silent device: %v, want ErrTimeout", err)
	}
	if !slices.Contains(p.events, "flush") {
		t.Errorf("after a timeout the input was not flushed: %v", p.events)
	}
}

// TestRTULateWindowIsPerUnit: after a request to unit 2 times out (here
// it even gets unit 1's reply, which is discarded), the next request to
// unit 1 goes out after the line has been drained for the gap only, since
// a late reply from unit 2 cannot pass for unit 1's; a request to unit 2
// within the timeout after waits until then, draining, before it is sent.
func TestRTULateWindowIsPerUnit(t *testing.T) {
	const gap, timeout = time.Millisecond, 200 * time.Millisecond
	p := &recordingPort{reply: AppendCRC([]byte{1, 3, 2, 0, 7}), short: 2 * gap}
	line := NewRTU(Config{Name: "rs485", Timeout: timeout, BreakerThreshold: 100}, p, gap, false, nil)
	ctx := context.Background()
	if _, err := line.Unit(2).ReadRegisters(ctx, modbusconf.TableHolding, 0, 1); !errors.Is(err, drivers.ErrTimeout) {
		t.Fatalf("unit 2 answered by unit 1: %v, want ErrTimeout", err)
	}
	if st := line.Stats(); st.Discarded != 7 {
		t.Errorf("discarded %d bytes, want unit 1's 7", st.Discarded)
	}
	p.events, p.waits = nil, true
	if _, err := line.Unit(1).ReadRegisters(ctx, modbusconf.TableHolding, 0, 1); err != nil {
		t.Fatal(err)
	}
	before, _, _ := strings.Cut(strings.Join(p.events, ","), "flush")
	if before == "" || strings.Contains(before, "long wait") {
		t.Errorf("before unit 1's request after unit 2's timeout: %q; want a drain for the gap only", before)
	}
	p.events = nil
	line.Unit(2).ReadRegisters(ctx, modbusconf.TableHolding, 0, 1)
	before, _, _ = strings.Cut(strings.Join(p.events, ","), "flush")
	if !strings.Contains(before, "long wait") {
		t.Errorf("before unit 2's next request: %q; want a drain until its late reply could have come", before)
	}
}

// TestFrameGap: 3.5 characters of 11 bits, 1.75 ms above 19200 baud.
func TestFrameGap(t *testing.T) {
	for _, tc := range []struct {
		baud int
		want time.Duration
	}{
		{9600, 4010416 * time.Nanosecond},
		{19200, 2005208 * time.Nanosecond},
		{38400, 1750 * time.Microsecond},
		{115200, 1750 * time.Microsecond},
	} {
		if got := FrameGap(tc.baud); got != tc.want {
			t.Errorf("FrameGap(%d) = %v, want %v", tc.baud, got, tc.want)
		}
	}
}

// TestKernelRS485NeedsAUART: asking a pseudo-terminal (no UART) for kernel
// RS-485 mode fails cleanly with ErrUnavailable, naming the port.
func TestKernelRS485NeedsAUART(t *testing.T) {
	_, err := OpenPort(context.Background(), modbusconf.SerialConfig{Port: "/dev/ptmx", Baud: 9600, DataBits: 8, Parity: modbusconf.ParityNone, StopBits: 1, RS485: modbusconf.RS485Kernel})
	if !errors.Is(err, drivers.ErrUnavailable) {
		t.Fatalf("kernel RS-485 on /dev/ptmx: %v, want ErrUnavailable", err)
	}
}
