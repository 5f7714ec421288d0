package manifests

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/drivers/i2c/i2cconf"
)

func TestPositionString(t *testing.T) {
	tests := []struct {
		pos  Position
		want string
	}{
		{Position{File: "greenhouse.yml", Line: 14, Column: 17}, "greenhouse.yml:14:17"},
		{Position{Line: 3, Column: 1}, "3:1"},
		{Position{File: "a.yml", Line: 3}, "a.yml:3"},
		{Position{File: "a.yml"}, "a.yml"},
		{Position{}, "-"},
	}
	for _, tc := range tests {
		if got := tc.pos.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.pos, got, tc.want)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	e := &Error{
		Pos:   Position{File: "greenhouse.yml", Line: 14, Column: 17},
		Field: "devices[2].registers[0].byte_order",
		Err:   fmt.Errorf("%w %q (want big or little)", ErrUnknownValue, "ABDC"),
	}
	want := `greenhouse.yml:14:17: devices[2].registers[0].byte_order: unknown value "ABDC" (want big or little)`
	if got := e.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, ErrUnknownValue) {
		t.Errorf("errors.Is(%v, ErrUnknownValue) = false, want true", e)
	}
}

// base is a small valid manifest; the table below breaks one thing in it
// at a time.
const base = `version: 1
gateway: bench-1
buses:
  - {name: i2c1, kind: i2c, timeout: 250ms}
  - {name: gpio, kind: gpio}
devices:
  - {name: climate, bus: i2c1, model: sht3x, address: 0x44}
  - {name: relay, bus: gpio, model: gpio_out, pin: GPIO17, active_low: true}
  - name: panel
    bus: i2c1
    model: registers
    address: 32
    registers:
      - {name: level, address: 1, type: uint8, scale: 0.5, writable: true}
capabilities:
  - name: temperature
    type: number
    unit: "°C"
    ttl: 2s
    read: {device: climate, channel: temperature}
  - name: relay
    type: boolean
    read: {device: relay}
    do: {tool: do_set_relay, side_effects: [relay clicks], compensable: true}
  - name: level
    type: number
    unit: "%"
    read: {device: panel, channel: level}
    do:
      tool: do_set_level
      side_effects: [panel brightness changes]
      constraints: {min: 0, max: 100, step: 0.5}
sim:
  zones:
    - {name: zone1, humidity: 50, sensors: [climate], heaters: [relay]}
`

func TestParseBase(t *testing.T) {
	m, err := Parse("base.yml", []byte(base))
	if err != nil {
		t.Fatalf("Parse(base) error:\n%v", err)
	}
	min, max, step := 0.0, 100.0, 0.5
	want := &Manifest{
		File:    "base.yml",
		Version: 1,
		Gateway: "bench-1",
		Buses: []Bus{
			{Name: "i2c1", Kind: BusI2C, Timeout: 250 * time.Millisecond},
			{Name: "gpio", Kind: BusGPIO},
		},
		Devices: []Device{
			{Name: "climate", Bus: "i2c1", Model: ModelSHT3x, Address: 0x44},
			{Name: "relay", Bus: "gpio", Model: ModelGPIOOut, Pin: "GPIO17", ActiveLow: true},
			{Name: "panel", Bus: "i2c1", Model: ModelRegisters, Address: 0x20, Registers: []Register{
				{Name: "level", Address: 1, Type: i2cconf.RegUint8, ByteOrder: i2cconf.BigEndian, Scale: 0.5, Writable: true},
			}},
		},
		Capabilities: []Capability{
			{Name: "temperature", Type: TypeNumber, Unit: "°C", TTL: 2 * time.Second,
				Read: Binding{Device: "climate", Channel: "temperature"}},
			{Name: "relay", Type: TypeBoolean, Read: Binding{Device: "relay"},
				Do: &Action{Tool: "do_set_relay", SideEffects: []string{"relay clicks"}, Compensable: true}},
			{Name: "level", Type: TypeNumber, Unit: "%", Read: Binding{Device: "panel", Channel: "level"},
				Do: &Action{Tool: "do_set_level", SideEffects: []string{"panel brightness changes"},
					Constraints: Constraints{Min: &min, Max: &max, Step: &step}}},
		},
		Sim: &Sim{Zones: []Zone{{Name: "zone1", Humidity: 50, Sensors: []string{"climate"}, Heaters: []string{"relay"}}}},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("Parse(base) =\n%+v\nwant\n%+v", m, want)
	}
}

func TestParseAnchors(t *testing.T) {
	m := mustLoad(t, "valid_anchors", "manifest.yml")
	a, b := m.Devices[0], m.Devices[1]
	if b.Name != "light_b" || b.Address != 0x21 || b.Bus != "i2c1" || !reflect.DeepEqual(a.Registers, b.Registers) {
		t.Errorf("merged device = %+v, want light_a's fields with name light_b and address 0x21", b)
	}
	if r := a.Registers[1]; r.ByteOrder != i2cconf.LittleEndian || r.Scale != 0.01 {
		t.Errorf("register %+v, want little endian, scale 0.01", r)
	}
}

// TestParseErrors breaks base one way at a time and checks the class and
// the field of the one problem reported.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name      string
		old, new  string // replace old with new in base
		wantField string
		wantErr   error
	}{
		{"version", "version: 1", "version: 3", "version", ErrUnknownValue},
		{"gateway missing", "gateway: bench-1\n", "", "gateway", ErrMissing},
		{"gateway upper case", "gateway: bench-1", "gateway: Bench", "gateway", ErrBadName},
		{"unknown root key", "version: 1\n", "version: 1\nowner: me\n", "owner", ErrUnknownField},
		{"bus kind", "kind: gpio}", "kind: canbus}", "buses[1].kind", ErrUnknownValue},
		{"bus timeout zero", "timeout: 250ms", "timeout: 0ms", "buses[0].timeout", ErrRange},
		{"bus timeout number", "timeout: 250ms", "timeout: 250", "buses[0].timeout", ErrType},
		{"bus name", "kind: gpio}\n", "kind: gpio}\n  - {name: Spare, kind: gpio}\n", "buses[2].name", ErrBadName},
		{"device on unknown bus", "bus: gpio, model", "bus: gpio0, model", "devices[1].bus", ErrBadReference},
		{"model", "model: sht3x", "model: sht35", "devices[0].model", ErrUnknownValue},
		{"i2c model on gpio bus", "bus: i2c1, model: sht3x", "bus: gpio, model: sht3x", "devices[0].model", ErrNotAllowed},
		{"address too high", "address: 32", "address: 0x78", "devices[2].address", ErrRange},
		{"address too low", "address: 32", "address: 2", "devices[2].address", ErrRange},
		{"address as string", "address: 32", `address: "0x20"`, "devices[2].address", ErrType},
		{"sht3x address", "address: 0x44}", "address: 0x46}", "devices[0].address", ErrRange},
		{"address on gpio", "pin: GPIO17,", "pin: GPIO17, address: 0x20,", "devices[1].address", ErrNotAllowed},
		{"pin missing", "pin: GPIO17, ", "", "devices[1].pin", ErrMissing},
		{"register address", "address: 1, type", "address: 256, type", "devices[2].registers[0].address", ErrRange},
		{"register type", "type: uint8", "type: u8", "devices[2].registers[0].type", ErrUnknownValue},
		{"register byte order", "type: uint8,", "type: uint8, byte_order: ABCD,", "devices[2].registers[0].byte_order", ErrUnknownValue},
		{"capability type", "type: boolean", "type: bool", "capabilities[1].type", ErrUnknownValue},
		{"unit missing", "    unit: \"°C\"\n", "", "capabilities[0].unit", ErrMissing},
		{"unit on boolean", "type: boolean", "type: boolean\n    unit: on", "capabilities[1].unit", ErrNotAllowed},
		{"ttl negative", "ttl: 2s", "ttl: -2s", "capabilities[0].ttl", ErrRange},
		{"read device", "device: climate,", "device: clim,", "capabilities[0].read.device", ErrBadReference},
		{"sht3x channel", "channel: temperature", "channel: pressure", "capabilities[0].read.channel", ErrBadReference},
		{"register channel", "channel: level}", "channel: levels}", "capabilities[2].read.channel", ErrBadReference},
		{"gpio channel", "read: {device: relay}", "read: {device: relay, channel: level}", "capabilities[1].read.channel", ErrNotAllowed},
		{"do tool name", "tool: do_set_relay", "tool: set_relay", "capabilities[1].do.tool", ErrBadName},
		{"do tool duplicate", "tool: do_set_level", "tool: do_set_relay", "capabilities[2].do.tool", ErrDuplicate},
		{"read tool duplicate", "name: level\n", "name: relay\n", "capabilities[2].name", ErrDuplicate},
		{"do on read-only register", "writable: true", "writable: false", "capabilities[2].do", ErrNotAllowed},
		{"do without side effects", "side_effects: [relay clicks], ", "", "capabilities[1].do.side_effects", ErrMissing},
		{"min above max", "min: 0, max: 100", "min: 100, max: 0", "capabilities[2].do.constraints.max", ErrRange},
		{"step zero", "step: 0.5", "step: 0", "capabilities[2].do.constraints.step", ErrRange},
		{"enum on number", "step: 0.5}", "step: 0.5, enum: [a]}", "capabilities[2].do.constraints.enum", ErrNotAllowed},
		{"zone humidity", "humidity: 50", "humidity: 101", "sim.zones[0].humidity", ErrRange},
		{"zone sensor not sht3x", "sensors: [climate]", "sensors: [relay]", "sim.zones[0].sensors[0]", ErrNotAllowed},
		{"zone heater unknown", "heaters: [relay]", "heaters: [stove]", "sim.zones[0].heaters[0]", ErrBadReference},
		{"time scale", "sim:\n", "sim:\n  time_scale: -1\n", "sim.time_scale", ErrRange},
		{"device sim value", "writable: true}", "writable: true}\n    sim: {values: {level: 1000}}", "devices[2].sim.values.level", ErrRange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(base, tc.old) {
				t.Fatalf("base does not contain %q", tc.old)
			}
			src := strings.Replace(base, tc.old, tc.new, 1)
			_, err := Parse("t.yml", []byte(src))
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Parse = %v, want an *Error", err)
			}
			if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != 1 {
				t.Errorf("Parse reported %d problems, want 1:\n%v", n, err)
			}
			if pe.Field != tc.wantField || !errors.Is(pe, tc.wantErr) {
				t.Errorf("Parse = %v\nwant field %s, class %q", pe, tc.wantField, tc.wantErr)
			}
			checkErrors(t, err)
		})
	}
}

func TestParseNeverReturnsBoth(t *testing.T) {
	for _, src := range []string{"", "[", "version: 1\ngateway: g\n", "{", "--- |\n  x\n", "*a", "&a b", "? [a]\n: b\n"} {
		m, err := Parse("x.yml", []byte(src))
		if (m == nil) == (err == nil) {
			t.Errorf("Parse(%q) = %v, %v; want exactly one nil", src, m, err)
		}
		checkErrors(t, err)
	}
}
