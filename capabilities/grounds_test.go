package capabilities_test

import (
	"encoding/binary"
	"math"
	"testing"
	"testing/synctest"

	"github.com/promcp/promcp-device/drivers/i2c"
)

// TestReadingsCarryTheirGrounds: each model hands up the bytes the device
// sent for the value, and the conversion from them gives the value; a
// read served from the cache says so and carries the same bytes.
func TestReadingsCarryTheirGrounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		set, _, _ := open(t)
		temp := get(t, set, "temperature")
		r := temp.ReadWithin(t.Context(), 0)
		raw := r.Grounds.Raw
		if len(raw) != 6 || r.Grounds.Cached || i2c.CRC8(raw[0:2]) != raw[2] || i2c.CRC8(raw[3:5]) != raw[5] {
			t.Fatalf("SHT3x grounds % x (cached %v), want the 6-byte measurement with valid CRCs", raw, r.Grounds.Cached)
		}
		if c := i2c.Celsius(binary.BigEndian.Uint16(raw)); math.Abs(c-r.Value.(float64)) > 0.006 {
			t.Errorf("raw temperature word gives %v °C, the reading says %v", c, r.Value)
		}
		b := temp.Binding
		if b.Driver != "i2c" || b.Device != "climate" || b.Bus != "i2c1" || b.Address != "0x44" || b.Conversion == "" {
			t.Errorf("temperature binding %+v", b)
		}
		again := temp.Read(t.Context())
		if !again.Grounds.Cached || string(again.Grounds.Raw) != string(raw) {
			t.Errorf("cached read grounds % x cached %v, want the same bytes, cached", again.Grounds.Raw, again.Grounds.Cached)
		}

		lux := get(t, set, "lux")
		r = lux.ReadWithin(t.Context(), 0)
		if len(r.Grounds.Raw) != 2 || float64(binary.BigEndian.Uint16(r.Grounds.Raw)) != r.Value.(float64) {
			t.Errorf("lux = %v with grounds % x, want the uint16 register's 2 bytes", r.Value, r.Grounds.Raw)
		}
		if b := lux.Binding; b.Register != "lux (0x02)" || b.Conversion != "uint16 big-endian × 1 + 0" {
			t.Errorf("lux binding %+v", b)
		}

		pump := get(t, set, "pump")
		if err := mustWriter(t, set).Write(t.Context(), pump, true); err != nil {
			t.Fatal(err)
		}
		r = pump.ReadWithin(t.Context(), 0)
		if r.Value != true || len(r.Grounds.Raw) != 1 || r.Grounds.Raw[0] != 1 || pump.Binding.Address != "pin GPIO23" {
			t.Errorf("pump on: %v with grounds % x, binding %+v; want level 1", r.Value, r.Grounds.Raw, pump.Binding)
		}
	})
}
