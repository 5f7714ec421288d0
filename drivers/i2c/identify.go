package i2c

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/promcp/promcp-device/drivers"
)

// Address scan and chip identification, for commissioning (promcp-device
// scan). The scan is gentle and, by default, read-only: each address of
// 0x08..0x77 (0x00..0x07 and 0x78..0x7F are reserved by the I²C
// specification and never probed) gets one read of one byte, with no
// write before it, so no register pointer, latch or command of any chip
// is touched. A chip that answers is named from its answer where a read
// alone tells (the GPIO expanders), else given the candidates its
// address allows.
//
// With Identify, an answering address in the range of a supported chip
// also gets that chip's identification read, which starts by writing the
// register pointer (one byte that selects a register and changes nothing
// else on these chips): the BME280/BMP280 chip id at 0xD0, the INA219
// configuration register's power-on 0x399F, the ADS1115 configuration
// register's power-on 0x8583. An SHT3x does not acknowledge a read while
// no command is pending, so an address scan cannot see it; with Identify,
// 0x44 and 0x45 get the SHT3x's "read serial number" command (0x3780),
// a query that changes no setting and starts no measurement (Sensirion's
// SHT3x datasheet and driver). The SHT4x and SCD4x do not acknowledge a
// bare read either: where the SHT3x's query is not answered, 0x44..0x46
// get the SHT4x's serial-number command (0x89, one byte that no SHT3x
// command starts with), and 0x62 the SCD4x's get_data_ready_status
// (0xE4B8), the one query the SCD4x answers both idle and while it
// measures; each answer is checked against its CRC. A BH1750 has no id
// register and its every instruction changes its mode: one that answers
// a read at 0x5C is named by its address, the evidence saying so; at 0x23,
// an expander's address, the expanders' 22-byte read tells them apart (a
// BH1750 sends its 2-byte data register, then the line stays high). The expander addresses (0x20..0x27,
// 0x38..0x3F) are never written even with Identify: a byte written to a
// PCF8574 sets its outputs. The pointer byte goes to whatever answers: a
// chip that is none of the candidates may take it otherwise (a PCF8591 at
// 0x48..0x4F takes it as its control byte), which is why Identify is a
// choice.

// First and last 7-bit addresses an address scan probes.
const (
	ScanFirst = 0x08
	ScanLast  = 0x77
)

// Chip model names, as manifests spell them. This package does not import
// manifests; promcp-device scan checks that these are models it supports.
const (
	ChipBME280   = "bme280"
	ChipBMP280   = "bmp280"
	ChipSHT3x    = "sht3x"
	ChipINA219   = "ina219"
	ChipADS1115  = "ads1115"
	ChipADS1015  = "ads1015"
	ChipMCP23017 = "mcp23017"
	ChipPCF8574  = "pcf8574"
	ChipSHT4x    = "sht4x"
	ChipSCD4x    = "scd4x"
	ChipBH1750   = "bh1750"
)

// The SHT4x and SCD4x answer a query after a wait, not within the
// transaction: what Identify waits between the query and the read.
const identifyWait = 10 * time.Millisecond

// SHT3x's serial-number command, with clock stretching: the sensor answers
// two CRC-protected words.
const sht3xCmdSerial = 0x3780

// Identity is what an address scan learned of one address.
type Identity struct {
	Addr uint16
	// Model is the chip's model when identified, else "".
	Model string
	// Candidates are the supported models that can sit at Addr.
	Candidates []string
	// Evidence says what identified the chip, or why it was not.
	Evidence string
	// Serial is an SHT3x's serial number (HasSerial).
	Serial    uint32
	HasSerial bool
}

// String describes the identity in one line.
func (id Identity) String() string {
	what := "unidentified"
	switch {
	case id.Model != "":
		what = id.Model
	case len(id.Candidates) > 0:
		what = "unidentified (could be " + joinOr(id.Candidates) + ")"
	}
	s := fmt.Sprintf("0x%02x: %s", id.Addr, what)
	if id.Evidence != "" {
		s += ": " + id.Evidence
	}
	return s
}

func joinOr(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	out := s[0]
	for _, w := range s[1 : len(s)-1] {
		out += ", " + w
	}
	return out + " or " + s[len(s)-1]
}

// CandidatesAt returns the supported chip models whose datasheets allow
// the 7-bit address addr.
func CandidatesAt(addr uint16) []string {
	var c []string
	switch {
	case addr == 0x23:
		c = append(c, ChipMCP23017, ChipPCF8574, ChipBH1750)
	case addr >= 0x20 && addr <= 0x27:
		c = append(c, ChipMCP23017, ChipPCF8574)
	case addr >= 0x38 && addr <= 0x3F:
		c = append(c, ChipPCF8574)
	case addr == 0x76 || addr == 0x77:
		c = append(c, ChipBME280, ChipBMP280)
	case addr == 0x5C:
		c = append(c, ChipBH1750)
	case addr == 0x62:
		c = append(c, ChipSCD4x)
	}
	if addr == 0x44 || addr == 0x45 {
		c = append(c, ChipSHT3x)
	}
	if addr >= 0x44 && addr <= 0x46 {
		c = append(c, ChipSHT4x)
	}
	if addr >= 0x40 && addr <= 0x4F {
		c = append(c, ChipINA219)
	}
	if addr >= 0x48 && addr <= 0x4B {
		c = append(c, ChipADS1115, ChipADS1015)
	}
	return c
}

// ScanOptions tune [ScanAddresses].
type ScanOptions struct {
	// Identify allows the identification reads that write a register
	// pointer or the SHT3x's serial-number query (see the package's scan
	// notes); without it the scan only reads.
	Identify bool
	// Sleep waits between a Sensirion query and its answer; nil: [Sleep].
	Sleep SleepFunc
	// More names candidates at addr beyond [CandidatesAt]'s (promcp-device
	// scan: every model the manifest declares there), listed for an
	// answering address this package cannot identify; nil: none.
	More func(addr uint16) []string
}

// candidatesAt is CandidatesAt(addr) and o.More's.
func (o ScanOptions) candidatesAt(addr uint16) []string {
	c := CandidatesAt(addr)
	if o.More != nil {
		for _, m := range o.More(addr) {
			if !slices.Contains(c, m) {
				c = append(c, m)
			}
		}
	}
	return c
}

// ScanAddresses probes every address of ScanFirst..ScanLast on b, in
// order, and returns what answered. An address that does not acknowledge
// is absent; any other error (a timeout, a bus error, ctx done) stops the
// scan and is returned, naming the bus and the address, with what was
// found before it.
func ScanAddresses(ctx context.Context, b *Bus, o ScanOptions) ([]Identity, error) {
	var found []Identity
	for addr := uint16(ScanFirst); addr <= ScanLast; addr++ {
		id, present, err := Identify(ctx, b, addr, o)
		if err != nil {
			return found, err
		}
		if present {
			found = append(found, id)
		}
	}
	return found, nil
}

// Identify probes one address as [ScanAddresses] does: present reports
// whether anything answered there.
func Identify(ctx context.Context, b *Bus, addr uint16, o ScanOptions) (id Identity, present bool, err error) {
	id = Identity{Addr: addr, Candidates: o.candidatesAt(addr)}
	var one [1]byte
	err = b.Tx(ctx, addr, nil, one[:])
	switch {
	case errors.Is(err, drivers.ErrNACK):
		if o.Identify {
			return identifySensirion(ctx, b, id, o)
		}
		return id, false, nil
	case err != nil:
		return id, false, err
	}
	switch {
	case slices.Contains(id.Candidates, ChipPCF8574):
		err = identifyExpander(ctx, b, &id)
	case slices.Equal(id.Candidates, []string{ChipBH1750}):
		id.Model, id.Evidence = ChipBH1750, fmt.Sprintf("answers a read at 0x%02x, a BH1750's address (it has no id register: check that it is one)", addr)
	case !o.Identify:
		if len(id.Candidates) > 0 {
			id.Evidence = "answers a read; --identify would read its id"
		}
	case slices.Contains(id.Candidates, ChipBME280):
		err = identifyBME(ctx, b, &id)
	case slices.Contains(id.Candidates, ChipINA219):
		err = identifyINAorADS(ctx, b, &id)
	}
	return id, true, err
}

// readReg writes the register pointer reg and reads len(r) bytes; a NACK
// is reported as ok false, other errors returned.
func readReg(ctx context.Context, b *Bus, addr uint16, reg byte, r []byte) (ok bool, err error) {
	err = b.Tx(ctx, addr, []byte{reg}, r)
	if errors.Is(err, drivers.ErrNACK) {
		return false, nil
	}
	return err == nil, err
}

// identifyBME reads the chip id register of a BME280 or BMP280.
func identifyBME(ctx context.Context, b *Bus, id *Identity) error {
	var chip [1]byte
	ok, err := readReg(ctx, b, id.Addr, BMERegChipID, chip[:])
	switch {
	case err != nil:
		return err
	case !ok:
		id.Evidence = "chip id read at 0xD0 not acknowledged"
	case chip[0] == BME280ChipID:
		id.Model, id.Evidence = ChipBME280, "chip id 0x60 at 0xD0"
	case chip[0] == BMP280ChipID:
		id.Model, id.Evidence = ChipBMP280, "chip id 0x58 at 0xD0"
	default:
		id.Evidence = fmt.Sprintf("chip id 0x%02x at 0xD0 is neither a BME280's 0x60 nor a BMP280's 0x58", chip[0])
	}
	return nil
}

// identifyINAorADS reads register 0 (INA219 configuration) and, within
// the ADS1x15's addresses, register 1 (ADS1x15 configuration), and names
// the chip whose power-on default answered. A chip that something has
// configured since power-on keeps its candidates.
func identifyINAorADS(ctx context.Context, b *Bus, id *Identity) error {
	var r0, r1 [2]byte
	ok0, err := readReg(ctx, b, id.Addr, INARegConfig, r0[:])
	if err != nil {
		return err
	}
	v0 := uint16(r0[0])<<8 | uint16(r0[1])
	if ok0 && v0 == INAConfigDefault {
		id.Model, id.Evidence = ChipINA219, "configuration register 0x399F, the INA219's power-on default"
		return nil
	}
	id.Evidence = fmt.Sprintf("register 0x00 reads 0x%04x, not the INA219's power-on 0x399F", v0)
	if !slices.Contains(id.Candidates, ChipADS1115) {
		return nil
	}
	ok1, err := readReg(ctx, b, id.Addr, ADSRegConfig, r1[:])
	if err != nil {
		return err
	}
	v1 := uint16(r1[0])<<8 | uint16(r1[1])
	if ok1 && v1 == ADSConfigDefault {
		// The ADS1015's power-on configuration is the same word: the
		// 16-bit part is the likelier and reads a 12-bit one's inputs too.
		id.Model, id.Evidence = ChipADS1115, "configuration register 0x8583, the ADS1115's (and ADS1015's) power-on default"
		return nil
	}
	id.Evidence += fmt.Sprintf("; register 0x01 reads 0x%04x, not the ADS1x15's power-on 0x8583 (configured since power-on?)", v1)
	return nil
}

// identifySensirion sends the queries of the Sensirion chips that can sit
// at an address that did not acknowledge a read: an SHT3x's, then an
// SHT4x's serial number; an SCD4x's data-ready status. present is false
// when none answered.
func identifySensirion(ctx context.Context, b *Bus, id Identity, o ScanOptions) (Identity, bool, error) {
	sleep := o.Sleep
	if sleep == nil {
		sleep = Sleep
	}
	var found Identity
	present := false
	for _, q := range []struct {
		chip string
		try  func() (Identity, bool, error)
	}{
		{ChipSHT3x, func() (Identity, bool, error) { return identifySHT3x(ctx, b, id) }},
		{ChipSHT4x, func() (Identity, bool, error) {
			return identifyAfterWait(ctx, b, id, sleep, ChipSHT4x, []byte{SHT4xSerial}, 6)
		}},
		{ChipSCD4x, func() (Identity, bool, error) {
			return identifyAfterWait(ctx, b, id, sleep, ChipSCD4x, []byte{SCD4xDataReady >> 8, SCD4xDataReady & 0xFF}, 3)
		}},
	} {
		if !slices.Contains(id.Candidates, q.chip) {
			continue
		}
		got, ok, err := q.try()
		switch {
		case err != nil:
			return got, ok, err
		case got.Model != "":
			return got, true, nil
		case ok && !present:
			found, present = got, true // answered, but not as this chip
		}
	}
	if !present {
		return id, false, nil
	}
	return found, true, nil
}

// identifyAfterWait writes chip's query q, waits, reads n bytes (CRC-
// protected words) and names chip if their checksums hold.
func identifyAfterWait(ctx context.Context, b *Bus, id Identity, sleep SleepFunc, chip string, q []byte, n int) (Identity, bool, error) {
	if err := b.Tx(ctx, id.Addr, q, nil); errors.Is(err, drivers.ErrNACK) {
		return id, false, nil
	} else if err != nil {
		return id, false, err
	}
	if err := sleep(ctx, identifyWait); err != nil {
		return id, false, err
	}
	r := make([]byte, n)
	if err := b.Tx(ctx, id.Addr, nil, r); errors.Is(err, drivers.ErrNACK) {
		return id, false, nil
	} else if err != nil {
		return id, false, err
	}
	what := map[string]string{ChipSHT4x: "serial-number answer", ChipSCD4x: "data-ready status"}[chip]
	for i := 0; i+2 < n; i += 3 {
		if CRC8(r[i:i+2]) != r[i+2] {
			id.Evidence = fmt.Sprintf("%s % x fails the %s checksum", what, r, strings.ToUpper(chip))
			return id, true, nil
		}
	}
	id.Model = chip
	if chip == ChipSHT4x {
		id.Serial, id.HasSerial = uint32(r[0])<<24|uint32(r[1])<<16|uint32(r[3])<<8|uint32(r[4]), true
		id.Evidence = fmt.Sprintf("serial number 0x%08x (checksums good)", id.Serial)
	} else {
		id.Evidence = fmt.Sprintf("data-ready status 0x%02x%02x (checksum good)", r[0], r[1])
	}
	return id, true, nil
}

// identifySHT3x sends an SHT3x's serial-number query to an address that
// did not acknowledge a read, and checks the answer's checksums.
func identifySHT3x(ctx context.Context, b *Bus, id Identity) (Identity, bool, error) {
	var r [6]byte
	err := b.Tx(ctx, id.Addr, []byte{sht3xCmdSerial >> 8, sht3xCmdSerial & 0xFF}, r[:])
	switch {
	case errors.Is(err, drivers.ErrNACK):
		return id, false, nil
	case err != nil:
		return id, false, err
	}
	if CRC8(r[0:2]) != r[2] || CRC8(r[3:5]) != r[5] {
		id.Evidence = fmt.Sprintf("serial-number answer % x fails the SHT3x checksum", r)
		return id, true, nil
	}
	id.Model, id.HasSerial = ChipSHT3x, true
	id.Serial = uint32(r[0])<<24 | uint32(r[1])<<16 | uint32(r[3])<<8 | uint32(r[4])
	id.Evidence = fmt.Sprintf("serial number 0x%08x (checksums good)", id.Serial)
	return id, true, nil
}

// identifyExpander tells an MCP23017 from a PCF8574 by reads alone: 22
// bytes read with no pointer written are an MCP23017's 22 registers (the
// pointer advances on each byte), not all equal (IODIR reads 0xFF and
// IPOL 0x00 at power-on), and a PCF8574's one port byte repeated. The
// read also returns (and so clears) an MCP23017's interrupt capture.
func identifyExpander(ctx context.Context, b *Bus, id *Identity) error {
	if !slices.Contains(id.Candidates, ChipMCP23017) {
		id.Model, id.Evidence = ChipPCF8574, "answers a read at a PCF8574A address"
		return nil
	}
	r := make([]byte, 22)
	if err := b.Tx(ctx, id.Addr, nil, r); err != nil {
		return err
	}
	if slices.Contains(id.Candidates, ChipBH1750) && !slices.ContainsFunc(r[2:], func(v byte) bool { return v != 0xFF }) && (r[0] != 0xFF || r[1] != 0xFF) {
		id.Model, id.Evidence = ChipBH1750, fmt.Sprintf("a 22-byte read returns 2 bytes (0x%02x%02x), then the line high: a BH1750's data register, not an MCP23017's 22 registers", r[0], r[1])
		return nil
	}
	for _, v := range r[1:] {
		if v != r[0] {
			id.Model, id.Evidence = ChipMCP23017, "a 22-byte read returns different registers"
			return nil
		}
	}
	id.Model, id.Evidence = ChipPCF8574, fmt.Sprintf("a 22-byte read returns one port byte 0x%02x, repeated", r[0])
	return nil
}
