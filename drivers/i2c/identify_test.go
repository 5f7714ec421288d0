package i2c

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"periph.io/x/conn/v3/i2c/i2ctest"
	"periph.io/x/conn/v3/physic"

	"github.com/promcp/promcp-device/drivers"
)

// sparseBus plays the transcript pb for the addresses in present and does
// not acknowledge any other, as Linux i2c-dev reports an empty address;
// it records every write, to any address.
type sparseBus struct {
	present map[uint16]bool
	pb      *i2ctest.Playback
	writes  []string
	probed  []uint16
}

func (b *sparseBus) String() string                  { return "sparse" }
func (b *sparseBus) SetSpeed(physic.Frequency) error { return nil }
func (b *sparseBus) Tx(addr uint16, w, r []byte) error {
	b.probed = append(b.probed, addr)
	if len(w) > 0 {
		b.writes = append(b.writes, fmt.Sprintf("0x%02x:% x", addr, w))
	}
	if !b.present[addr] {
		return fmt.Errorf("i2c-dev: %w", drivers.ErrnoRemoteIO)
	}
	return b.pb.Tx(addr, w, r)
}

func sparse(t *testing.T, present []uint16, ops ...i2ctest.IO) *sparseBus {
	b := &sparseBus{present: map[uint16]bool{}, pb: playback(t, ops...)}
	for _, a := range present {
		b.present[a] = true
	}
	return b
}

// probe is the scan's one-byte read with no write.
func probe(addr uint16, b byte) i2ctest.IO { return i2ctest.IO{Addr: addr, R: []byte{b}} }

// TestScanAddressesIdentify scans a bus with one of each supported chip,
// each answering its datasheet's power-on values, and checks the exact
// transcript: the probe read, then only the identification reads each
// address allows.
func TestScanAddressesIdentify(t *testing.T) {
	ops := []i2ctest.IO{
		probe(0x20, 0xFF),
		{Addr: 0x20, R: []byte{0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0}}, // MCP23017 power-on registers from IODIRA
		probe(0x27, 0xF0),
		{Addr: 0x27, R: []byte(strings.Repeat("\xF0", 22))}, // a PCF8574's port, repeated
		probe(0x40, 0x39),
		{Addr: 0x40, W: []byte{0x00}, R: []byte{0x39, 0x9F}}, // INA219 configuration, power-on
		// 0x44: an SHT3x NACKs the probe (nothing pending); the serial query answers.
		{Addr: 0x44, W: []byte{0x37, 0x80}, R: []byte{0xBE, 0xEF, 0x92, 0xBE, 0xEF, 0x92}},
		probe(0x48, 0x00),
		{Addr: 0x48, W: []byte{0x00}, R: []byte{0x00, 0x00}}, // ADS1115 conversion register
		{Addr: 0x48, W: []byte{0x01}, R: []byte{0x85, 0x83}}, // ADS1115 configuration, power-on
		probe(0x76, 0x00),
		{Addr: 0x76, W: []byte{0xD0}, R: []byte{0x60}}, // BME280 chip id
		probe(0x77, 0x00),
		{Addr: 0x77, W: []byte{0xD0}, R: []byte{0x58}}, // BMP280 chip id
	}
	bus := sparse(t, []uint16{0x20, 0x27, 0x40, 0x44, 0x48, 0x76, 0x77}, ops...)
	bus.present[0x44] = false // the probe read is refused ...
	sht := bus.pb
	found, err := ScanAddresses(context.Background(), NewBus("1", &sht3xOnCommand{sparseBus: bus, pb: sht}, 0, nil), ScanOptions{Identify: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, id := range found {
		got = append(got, fmt.Sprintf("0x%02x=%s", id.Addr, id.Model))
	}
	want := "0x20=mcp23017 0x27=pcf8574 0x40=ina219 0x44=sht3x 0x48=ads1115 0x76=bme280 0x77=bmp280"
	if strings.Join(got, " ") != want {
		t.Errorf("found %s\nwant  %s", strings.Join(got, " "), want)
	}
	if found[3].Serial != 0xBEEFBEEF || !found[3].HasSerial {
		t.Errorf("sht3x serial 0x%08x, want 0xbeefbeef", found[3].Serial)
	}
	for _, w := range bus.writes {
		if strings.HasPrefix(w, "0x2") || strings.HasPrefix(w, "0x3") {
			t.Errorf("wrote %s at an expander address", w)
		}
	}
	if first, last := bus.probed[0], bus.probed[len(bus.probed)-1]; first != 0x08 || last != 0x77 {
		t.Errorf("probed 0x%02x..0x%02x, want 0x08..0x77 (the reserved addresses skipped)", first, last)
	}
}

// sht3xOnCommand is a sparse bus on which an absent address still
// answers a 2-byte command: an SHT3x, which NACKs a bare read.
type sht3xOnCommand struct {
	*sparseBus
	pb *i2ctest.Playback
}

func (b *sht3xOnCommand) Tx(addr uint16, w, r []byte) error {
	if addr == 0x44 && len(w) == 2 {
		b.probed = append(b.probed, addr)
		b.writes = append(b.writes, fmt.Sprintf("0x%02x:% x", addr, w))
		return b.pb.Tx(addr, w, r)
	}
	return b.sparseBus.Tx(addr, w, r)
}

// TestScanAddressesReadOnly: without Identify nothing is written to any
// address; the expanders are still told apart by their reads, the others
// keep their candidates.
func TestScanAddressesReadOnly(t *testing.T) {
	bus := sparse(t, []uint16{0x20, 0x76},
		probe(0x20, 0xFF),
		i2ctest.IO{Addr: 0x20, R: []byte{0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0}},
		probe(0x76, 0x00),
	)
	found, err := ScanAddresses(context.Background(), NewBus("1", bus, 0, nil), ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(bus.writes) != 0 {
		t.Errorf("writes without --identify: %v", bus.writes)
	}
	if len(found) != 2 || found[0].Model != ChipMCP23017 || found[1].Model != "" {
		t.Fatalf("found %v", found)
	}
	if got, want := found[1].String(), "0x76: unidentified (could be bme280 or bmp280): answers a read; --identify would read its id"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if len(bus.probed) != ScanLast-ScanFirst+1+1 {
		t.Errorf("%d transactions, want one per address 0x08..0x77 and the expander's read", len(bus.probed))
	}
}

// TestIdentifyUnknownAnswers: a chip at a known address that gives another
// answer is reported present and unidentified, saying what it read.
func TestIdentifyUnknownAnswers(t *testing.T) {
	cases := []struct {
		addr uint16
		ops  []i2ctest.IO
		want string
	}{
		{0x76, []i2ctest.IO{probe(0x76, 0), {Addr: 0x76, W: []byte{0xD0}, R: []byte{0x61}}},
			"0x76: unidentified (could be bme280 or bmp280): chip id 0x61 at 0xD0 is neither a BME280's 0x60 nor a BMP280's 0x58"},
		{0x41, []i2ctest.IO{probe(0x41, 0), {Addr: 0x41, W: []byte{0x00}, R: []byte{0x01, 0x9F}}},
			"0x41: unidentified (could be ina219): register 0x00 reads 0x019f, not the INA219's power-on 0x399F"},
		{0x4A, []i2ctest.IO{probe(0x4A, 0), {Addr: 0x4A, W: []byte{0x00}, R: []byte{0x12, 0x34}}, {Addr: 0x4A, W: []byte{0x01}, R: []byte{0x05, 0x83}}},
			"0x4a: unidentified (could be ina219, ads1115 or ads1015): register 0x00 reads 0x1234, not the INA219's power-on 0x399F; register 0x01 reads 0x0583, not the ADS1x15's power-on 0x8583 (configured since power-on?)"},
		{0x45, []i2ctest.IO{{Addr: 0x45, W: []byte{0x37, 0x80}, R: []byte{0xBE, 0xEF, 0x93, 0xBE, 0xEF, 0x92}}},
			"0x45: unidentified (could be sht3x, sht4x or ina219): serial-number answer be ef 93 be ef 92 fails the SHT3x checksum"},
		{0x10, []i2ctest.IO{probe(0x10, 0)}, "0x10: unidentified"},
	}
	for _, tc := range cases {
		present := []uint16{tc.addr}
		if tc.addr == 0x45 {
			present = nil
		}
		bus := sparse(t, present, tc.ops...)
		var pb i2cBusFunc = bus.Tx
		if tc.addr == 0x45 {
			pb = func(addr uint16, w, r []byte) error {
				if len(w) == 2 {
					return bus.pb.Tx(addr, w, r)
				}
				return bus.Tx(addr, w, r)
			}
		}
		id, present2, err := Identify(context.Background(), NewBus("1", pb, 0, nil), tc.addr, ScanOptions{Identify: true})
		if err != nil || !present2 || id.String() != tc.want {
			t.Errorf("0x%02x: %q, present %v, %v\nwant %q", tc.addr, id, present2, err, tc.want)
		}
	}
}

// i2cBusFunc is a bus made of its Tx.
type i2cBusFunc func(addr uint16, w, r []byte) error

func (f i2cBusFunc) String() string                    { return "func" }
func (f i2cBusFunc) SetSpeed(physic.Frequency) error   { return nil }
func (f i2cBusFunc) Tx(addr uint16, w, r []byte) error { return f(addr, w, r) }

// TestScanAddressesBusError: an error other than a NACK stops the scan,
// naming the bus and the address.
func TestScanAddressesBusError(t *testing.T) {
	fail := i2cBusFunc(func(addr uint16, w, r []byte) error {
		if addr == 0x30 {
			return errors.New("arbitration lost")
		}
		return fmt.Errorf("i2c-dev: %w", drivers.ErrnoRemoteIO)
	})
	found, err := ScanAddresses(context.Background(), NewBus("1", fail, 0, nil), ScanOptions{})
	if err == nil || len(found) != 0 || !strings.Contains(err.Error(), "i2c 1 addr 0x30") {
		t.Fatalf("found %v, err %v; want an error naming i2c 1 addr 0x30", found, err)
	}
}

// sensirionChip answers as a Sensirion chip does: it acknowledges only its
// own commands (cmdLen bytes; a query in cmds) and a read only after one,
// with the query's answer.
type sensirionChip struct {
	cmdLen  int
	answers map[string][]byte // by the query's bytes
	pending []byte
}

func (c *sensirionChip) tx(w, r []byte) error {
	nack := fmt.Errorf("i2c-dev: %w", drivers.ErrnoRemoteIO)
	if len(w) > 0 {
		a, ok := c.answers[string(w)]
		if len(w) != c.cmdLen || !ok {
			return nack
		}
		c.pending = a
	}
	if len(r) > 0 {
		if c.pending == nil {
			return nack
		}
		copy(r, c.pending)
		c.pending = nil
	}
	return nil
}

// The SHT4x at 0x44..0x46 and the SCD4x at 0x62 do not acknowledge a bare
// read: with Identify, each is named by its CRC-checked answer to a query
// that changes nothing (an SHT3x's serial query first where one can sit;
// the SHT4x NACKs it); without, nothing is written and they are absent.
// A BH1750 answers a read and is named by its address, nothing written.
func TestIdentifySHT4xSCD4xBH1750(t *testing.T) {
	sht4x := &sensirionChip{cmdLen: 1, answers: map[string][]byte{"\x89": append(SensirionWord(0x0F4A), SensirionWord(0x3B21)...)}}
	scd4x := &sensirionChip{cmdLen: 2, answers: map[string][]byte{"\xE4\xB8": SensirionWord(0x8006)}}
	bh1750 := func(w, r []byte) error { // its data register, then the line high
		for i := range r {
			r[i] = 0xFF
		}
		copy(r, []byte{0x01, 0x90})
		return nil
	}
	chips := map[uint16]func(w, r []byte) error{0x45: sht4x.tx, 0x46: sht4x.tx, 0x62: scd4x.tx, 0x23: bh1750, 0x5C: bh1750}
	var writes []string
	pb := i2cBusFunc(func(addr uint16, w, r []byte) error {
		if len(w) > 0 {
			writes = append(writes, fmt.Sprintf("0x%02x:% x", addr, w))
		}
		if f, ok := chips[addr]; ok {
			return f(w, r)
		}
		return fmt.Errorf("i2c-dev: %w", drivers.ErrnoRemoteIO)
	})
	noWait := func(context.Context, time.Duration) error { return nil }
	found, err := ScanAddresses(t.Context(), NewBus("1", pb, 0, nil), ScanOptions{Identify: true, Sleep: noWait})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, id := range found {
		got = append(got, id.String())
	}
	want := []string{
		"0x23: bh1750: a 22-byte read returns 2 bytes (0x0190), then the line high: a BH1750's data register, not an MCP23017's 22 registers",
		"0x45: sht4x: serial number 0x0f4a3b21 (checksums good)",
		"0x46: sht4x: serial number 0x0f4a3b21 (checksums good)",
		"0x5c: bh1750: answers a read at 0x5c, a BH1750's address (it has no id register: check that it is one)",
		"0x62: scd4x: data-ready status 0x8006 (checksum good)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantWrites := "0x44:37 80 0x44:89 0x45:37 80 0x45:89 0x46:89 0x62:e4 b8"
	if g := strings.Join(writes, " "); g != wantWrites {
		t.Errorf("writes %s\nwant   %s", g, wantWrites)
	}

	writes = nil
	found, err = ScanAddresses(t.Context(), NewBus("1", pb, 0, nil), ScanOptions{Sleep: noWait})
	if err != nil || len(found) != 2 || found[0].Model != ChipBH1750 || found[1].Model != ChipBH1750 || len(writes) != 0 {
		t.Errorf("without Identify: %v, %v, writes %v; want the two bh1750s alone, nothing written", found, err, writes)
	}
}

// ScanOptions.More adds the candidates a caller knows at an address (a
// model declared there that this package cannot identify): an answering
// chip is listed as possibly one, nothing written for it.
func TestScanMoreCandidates(t *testing.T) {
	bus := sparse(t, []uint16{0x10}, probe(0x10, 0))
	more := func(addr uint16) []string {
		if addr == 0x10 {
			return []string{"veml7700"}
		}
		return nil
	}
	found, err := ScanAddresses(t.Context(), NewBus("1", bus, 0, nil), ScanOptions{Identify: true, More: more})
	if err != nil || len(found) != 1 || found[0].String() != "0x10: unidentified (could be veml7700)" || strings.Contains(strings.Join(bus.writes, " "), "0x10:") {
		t.Fatalf("%v, %v, writes %v; want 0x10 as a possible veml7700, nothing written to it", found, err, bus.writes)
	}
}
