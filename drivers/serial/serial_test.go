package serial_test

import (
	"bufio"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
	"github.com/promcp/promcp-device/drivers/serial"
	"github.com/promcp/promcp-device/sim"
)

// instrument answers requests on the master side of a pty: each request
// line maps to a response line; unknown requests get no answer.
func instrument(t *testing.T, answers map[string]string) (*serial.Line, *int) {
	t.Helper()
	p, err := sim.OpenPTY()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	var mu sync.Mutex
	seen := new(int)
	go func() {
		r := bufio.NewReader(p.Master())
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			mu.Lock()
			*seen++
			mu.Unlock()
			if a, ok := answers[strings.TrimRight(line, "\r\n")]; ok {
				p.Master().Write([]byte(a + "\r\n"))
			}
		}
	}()
	port, err := modbus.OpenPort(context.Background(), modbusconf.SerialConfig{Port: p.SlavePath, Baud: 9600, DataBits: 8, Parity: modbusconf.ParityNone, StopBits: 1})
	if err != nil {
		t.Fatal(err)
	}
	l := serial.NewLine(serial.Config{Name: "rs232", Timeout: 300 * time.Millisecond}, port, nil)
	t.Cleanup(func() { l.Close() })
	return l, seen
}

func TestInstrumentReads(t *testing.T) {
	line, _ := instrument(t, map[string]string{
		"READ?": "T=21.50 H=40.2",
		"ID?":   "ACME-7",
		"BAD?":  "T=warm H=1",
	})
	pattern := `T=(?P<temperature>-?[0-9.]+) H=(?P<humidity>[0-9.]+)`
	for _, tc := range []struct {
		name    string
		request string
		want    map[string]float64
		err     error
	}{
		{"values", "READ?", map[string]float64{"temperature": 21.5, "humidity": 40.2}, nil},
		{"no match", "ID?", nil, serial.ErrNoMatch},
		{"not a number", "BAD?", nil, serial.ErrNoMatch},
		{"silent", "NOPE?", nil, drivers.ErrTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := line.Instrument("probe", serial.InstrumentConfig{Request: tc.request, Terminator: "\r\n", Response: pattern}, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := in.Read(t.Context())
			if !errors.Is(err, tc.err) || (tc.err == nil && (got["temperature"] != tc.want["temperature"] || got["humidity"] != tc.want["humidity"])) {
				t.Fatalf("Read(%q) = %v, %v; want %v, %v", tc.request, got, err, tc.want, tc.err)
			}
		})
	}
}

// TestOneTransactionAtATime: two instruments read concurrently on one line
// both get their own answer (their requests and responses never interleave).
func TestOneTransactionAtATime(t *testing.T) {
	line, _ := instrument(t, map[string]string{"A?": "v=1", "B?": "v=2"})
	a, _ := line.Instrument("a", serial.InstrumentConfig{Request: "A?", Response: `v=(?P<v>\d+)`}, 0)
	b, _ := line.Instrument("b", serial.InstrumentConfig{Request: "B?", Response: `v=(?P<v>\d+)`}, 0)
	var wg sync.WaitGroup
	for range 10 {
		for want, in := range map[float64]*serial.Instrument{1: a, 2: b} {
			wg.Go(func() {
				got, err := in.Read(t.Context())
				if err != nil || got["v"] != want {
					t.Errorf("Read = %v, %v; want v=%v", got, err, want)
				}
			})
		}
	}
	wg.Wait()
	if n := line.Transactions(); n < 2 || n > 20 {
		t.Fatalf("20 reads of 2 instruments made %d transactions, want 2..20 (coalesced or not)", n)
	}
}
