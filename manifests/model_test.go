package manifests

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

const declaredBase = `version: 1
gateway: climate
buses: [{name: i2c1, kind: i2c}, {name: gpio, kind: gpio}]
devices:
  - {name: air, bus: i2c1, model: sht4x, address: 0x44}
  - {name: co2, bus: i2c1, model: scd4x, address: 0x62}
  - {name: light, bus: i2c1, model: bh1750, address: 0x5c}
  - {name: porch, bus: gpio, model: dht22, pin: GPIO4}
  - {name: shed, bus: gpio, model: dht22, pin: GPIO5, iio_device: "iio:device1"}
capabilities:
  - {name: t, description: T, type: number, unit: "°C", read: {device: porch, channel: temperature}}
  - {name: l, description: L, type: number, unit: lx, read: {device: light, channel: illuminance}}
`

// The declared models load with their defaults, and their channels bind.
func TestDeclaredModelsLoad(t *testing.T) {
	m, err := Parse("climate.yml", []byte(declaredBase))
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	if got := m.Devices[3].IIODevice; got != DefaultIIODevice {
		t.Errorf("porch iio_device %q, want the default %q", got, DefaultIIODevice)
	}
	if got := m.Devices[4].IIODevice; got != "iio:device1" {
		t.Errorf("shed iio_device %q", got)
	}
	if m.Devices[2].Address != 0x5c {
		t.Errorf("bh1750 address 0x%x", m.Devices[2].Address)
	}
}

// Each declared model's checks give a positioned, plain message.
func TestDeclaredModelErrors(t *testing.T) {
	for _, tc := range []struct{ old, new, want string }{
		{"model: sht4x, address: 0x44", "model: sht4x, address: 0x40",
			"climate.yml:5:51: devices[0].address: out of range: 0x40 (an sht4x answers at 0x44; the SHT4x-B parts at 0x45, -C at 0x46)"},
		{"model: scd4x, address: 0x62", "model: scd4x",
			"devices[1].address: missing address (want the 7-bit I2C address of the scd4x, such as 0x62)"},
		{"address: 0x5c}", "address: 0x5d}",
			"devices[2].address: out of range: 0x5d (a bh1750 answers at 0x23, or 0x5c with ADDR high)"},
		{"channel: illuminance", "channel: lux",
			`climate.yml:12:86: capabilities[1].read.channel: undefined channel "lux" of device "light" (want illuminance)`},
		{"bus: gpio, model: dht22, pin: GPIO4", "bus: i2c1, model: dht22, pin: GPIO4",
			`devices[3].model: not allowed on i2c bus "i2c1": dht22 (want a gpio bus)`},
		{"model: dht22, pin: GPIO4}", "model: dht22}",
			`devices[3].pin: missing pin (want the host's pin name, such as "GPIO17")`},
		{`iio_device: "iio:device1"`, `iio_device: "/dev/iio:device1"`,
			`devices[4].iio_device: out of range: "/dev/iio:device1" (want the dht11 driver's IIO device, such as "iio:device0", as in /sys/bus/iio/devices)`},
		{"model: sht4x, address: 0x44}", "model: sht4x, address: 0x44, iio_device: iio:device0}",
			"devices[0].iio_device: not allowed for model sht4x (only dht22 is read through an IIO device)"},
		{"model: dht22, pin: GPIO4}", "model: dht22, pin: GPIO4, shunt_ohms: 0.1}",
			"devices[3].shunt_ohms: not allowed for model dht22 (only ina219 has a shunt)"},
		{"pin: GPIO5", "pin: GPIO4",
			`devices[4].pin: duplicate pin "GPIO4"`},
	} {
		text := strings.Replace(declaredBase, tc.old, tc.new, 1)
		if text == declaredBase {
			t.Fatalf("%q not in the base", tc.old)
		}
		_, err := Parse("climate.yml", []byte(text))
		if err == nil {
			t.Errorf("%s → %s: no error, want %s", tc.old, tc.new, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s → %s:\n%v\nwant a line containing\n%s", tc.old, tc.new, err, tc.want)
		}
	}
}

// The declarations are consistent: names unique, every model in the
// model words, addresses and channels present where they must be.
func TestDeclarations(t *testing.T) {
	seen := map[Model]bool{}
	for _, d := range Declared() {
		if seen[d.Model] {
			t.Errorf("%s declared twice", d.Model)
		}
		seen[d.Model] = true
		if !slices.Contains(Models(), d.Model) {
			t.Errorf("%s is not in the model words", d.Model)
		}
		if d.Bus == "" && (len(d.Addresses) == 0 || d.AddressHint == "") {
			t.Errorf("%s: an I2C chip without addresses or their hint", d.Model)
		}
		if (len(d.Channels) == 0) == (d.named == nil) || d.Doc == "" {
			t.Errorf("%s: no channels or no doc", d.Model)
		}
		for _, c := range d.Channels {
			if d.Type == TypeBoolean {
				continue // a level: no unit, no range
			}
			if c.Unit == "" || c.Min >= c.Max || c.Sim < c.Min || c.Sim > c.Max {
				t.Errorf("%s.%s: unit %q, range %g..%g, sim %g", d.Model, c.Name, c.Unit, c.Min, c.Max, c.Sim)
			}
		}
		if (len(d.Keys) > 0) != (d.decode != nil) {
			t.Errorf("%s: keys %v without a decoder, or a decoder without keys", d.Model, d.Keys)
		}
	}
}

// Each declaration's sample loads as written, with a capability on each
// of its channels in the channel's unit.
func TestDeclaredSamplesLoad(t *testing.T) {
	for _, d := range Declared() {
		if d.Sample == "" {
			t.Errorf("%s: no sample", d.Model)
			continue
		}
		var b strings.Builder
		b.WriteString("version: 1\ngateway: sample\nbuses: [{name: i2c1, kind: i2c}, {name: gpio, kind: gpio}, {name: w1, kind: onewire}, {name: pwm0, kind: pwm}, {name: spi0, kind: spi}, {name: rs232, kind: serial, port: /dev/ttyUSB0}, {name: rs485, kind: modbus_rtu, port: /dev/ttyUSB1}, {name: broker, kind: mqtt, mqtt: {broker: \"mqtt://127.0.0.1:1883\"}}]\ndevices:\n")
		for _, line := range strings.SplitAfter(d.Sample, "\n") {
			if line != "" {
				b.WriteString("  " + line)
			}
		}
		b.WriteString("capabilities:\n")
		name := strings.TrimPrefix(strings.SplitN(d.Sample, "\n", 2)[0], "- name: ")
		chans := d.Channels
		if d.named != nil { // the sample's inputs, in volts
			for _, line := range strings.Split(d.Sample, "\n") {
				if _, rest, ok := strings.Cut(line, "{name: "); ok {
					n, _, _ := strings.Cut(rest, ",")
					chans = append(chans, ChannelDecl{Name: n, Unit: "V"})
				}
			}
			if len(chans) == 0 { // the channels the loaded sample names
				chans = sampleChannels(t, b.String(), d)
			}
			if len(chans) == 0 {
				t.Errorf("%s: the sample names no channel", d.Model)
			}
		}
		for _, c := range chans {
			if d.Type == TypeBoolean && c.Name == "" { // a pin: its level
				fmt.Fprintf(&b, "  - {name: level, description: d, type: boolean, read: {device: %s}}\n", name)
				continue
			}
			if d.Type == TypeBoolean {
				fmt.Fprintf(&b, "  - {name: %s, description: d, type: boolean, read: {device: %s, channel: %s}}\n", c.Name, name, c.Name)
				continue
			}
			fmt.Fprintf(&b, "  - {name: %s, description: d, type: number, unit: %q, read: {device: %s, channel: %s}}\n", c.Name, c.Unit, name, c.Name)
		}
		m, err := Parse("sample.yml", []byte(b.String()))
		if err != nil {
			t.Errorf("%s: the sample does not load:\n%v\n%s", d.Model, err, b.String())
			continue
		}
		if m.Devices[0].Model != d.Model {
			t.Errorf("%s: the sample is a %s", d.Model, m.Devices[0].Model)
		}
	}
}

// sampleChannels loads a sample manifest without capabilities and returns
// the channels its device names, in a unit of 1.
func sampleChannels(t *testing.T, text string, d ModelDecl) []ChannelDecl {
	m, err := Parse("sample.yml", []byte(text))
	if err != nil || len(m.Devices) == 0 {
		t.Errorf("%s: the sample does not load:\n%v", d.Model, err)
		return nil
	}
	var chans []ChannelDecl
	for _, n := range d.named(m.Devices[0]) {
		chans = append(chans, ChannelDecl{Name: n, Unit: "1"})
	}
	return chans
}
