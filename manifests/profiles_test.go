package manifests

import (
	"strconv"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
)

// TestProfileRegisterMaps: the Eastron maps are the datasheets' input
// registers (float32 ABCD, two registers each) and a relay board's relay n
// is coil n-1, writable.
func TestProfileRegisterMaps(t *testing.T) {
	want120 := map[string]uint16{"voltage": 0x0000, "current": 0x0006, "power": 0x000C, "frequency": 0x0046, "import_energy": 0x0048, "total_energy": 0x0156}
	want630 := map[string]uint16{
		"voltage_l1": 0x0000, "voltage_l2": 0x0002, "voltage_l3": 0x0004,
		"current_l1": 0x0006, "current_l2": 0x0008, "current_l3": 0x000A,
		"power_l1": 0x000C, "power_l2": 0x000E, "power_l3": 0x0010, "power": 0x0034,
		"frequency": 0x0046, "import_energy": 0x0048, "total_energy": 0x0156,
	}
	for p, want := range map[DeviceProfile]map[string]uint16{ProfileEastronSDM120: want120, ProfileEastronSDM630: want630} {
		regs := ProfileRegisters(p)
		if len(regs) != len(want) {
			t.Errorf("%s: %d registers, want %d", p, len(regs), len(want))
		}
		for _, r := range regs {
			a, ok := want[r.Name]
			if !ok || r.Address != a || r.Table != modbusconf.TableInput || r.Type != modbusconf.DataFloat32 ||
				r.ByteOrder != modbusconf.OrderABCD || r.Scale != 1 || r.Bit != -1 || r.Writable {
				t.Errorf("%s: register %+v, want input %#04x float32 ABCD, scale 1, read-only", p, r, a)
			}
		}
	}
	for _, p := range []DeviceProfile{ProfileRelayBoard4, ProfileRelayBoard8, ProfileRelayBoard16} {
		regs := ProfileRegisters(p)
		if len(regs) != p.Relays() || p.Relays() == 0 {
			t.Fatalf("%s: %d registers for %d relays", p, len(regs), p.Relays())
		}
		for i, r := range regs {
			if r.Name != "relay"+strconv.Itoa(i+1) || r.Table != modbusconf.TableCoil || r.Address != uint16(i) || r.Type != modbusconf.DataBool || !r.Writable {
				t.Errorf("%s: register %d = %+v, want relay%d, coil %d, writable bool", p, i, r, i+1, i)
			}
		}
	}
	if ProfileRegisters("eastron_sdm220") != nil {
		t.Error("an unknown profile has registers")
	}
}

// TestProfileOverrides: a device's own registers come first and replace
// the profile's of the same name or at the same table and address; the
// others are the profile's.
func TestProfileOverrides(t *testing.T) {
	m, err := Parse("meters.yml", []byte(`
version: 1
gateway: meters
buses: [{name: rs485, kind: modbus_rtu, port: /dev/ttyUSB0}]
devices:
  - name: relays
    bus: rs485
    model: modbus
    unit_id: 3
    profile: relay_board_4
    registers:
      - {name: pump, table: coil, address: 0, type: bool, writable: true}
  - name: meter
    bus: rs485
    model: modbus
    unit_id: 1
    profile: eastron_sdm120
    registers:
      - {name: power, table: input, address: 0x0C, type: float32, scale: 0.001}
capabilities:
  - {name: pump, type: boolean, read: {device: relays, channel: pump}}
  - {name: valve, type: boolean, read: {device: relays, channel: relay2}}
  - {name: power, type: number, unit: kW, read: {device: meter, channel: power}}
  - {name: voltage, type: number, unit: V, read: {device: meter, channel: voltage}}
`))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range m.Devices[0].ModbusRegisters {
		names = append(names, r.Name)
	}
	if got, want := strings.Join(names, " "), "pump relay2 relay3 relay4"; got != want || m.Devices[0].Profile != ProfileRelayBoard4 {
		t.Errorf("relay board registers = %s (profile %q), want %s", got, m.Devices[0].Profile, want)
	}
	regs := m.Devices[1].ModbusRegisters
	if len(regs) != 6 || regs[0].Name != "power" || regs[0].Scale != 0.001 || regs[0].ByteOrder != modbusconf.OrderABCD {
		t.Errorf("sdm120 registers = %+v, want the own power (scale 0.001, ABCD) first and 5 of the profile's", regs)
	}
}

// TestShellyChannels: a Shelly preset's channel is the topic under
// shellies/<id>/; relay/<n> has a command topic and lower-case words; the
// availability topic is online, offline when false.
func TestShellyChannels(t *testing.T) {
	d := &MQTTDevice{Preset: PresetShelly, Topic: "shellyem-B9F3C1"}
	for _, tc := range []struct {
		name, state, command string
		ok                   bool
	}{
		{"emeter/0/power", "shellies/shellyem-B9F3C1/emeter/0/power", "", true},
		{"emeter/1/total", "shellies/shellyem-B9F3C1/emeter/1/total", "", true},
		{"relay/0", "shellies/shellyem-B9F3C1/relay/0", "shellies/shellyem-B9F3C1/relay/0/command", true},
		{"relay/0/power", "shellies/shellyem-B9F3C1/relay/0/power", "", true},
		{"emeter/+/power", "", "", false},
		{"/relay/0", "", "", false},
		{"relay//0", "", "", false},
	} {
		ch, ok := d.Channel(tc.name)
		if ok != tc.ok || ch.State != tc.state || ch.Command != tc.command {
			t.Errorf("Channel(%q) = %q, command %q, %t; want %q, %q, %t", tc.name, ch.State, ch.Command, ok, tc.state, tc.command, tc.ok)
		}
		if ok && (ch.On != "on" || ch.Off != "off" || ch.Payload != "{{value}}") {
			t.Errorf("Channel(%q) words %q/%q payload %q, want on/off and {{value}}", tc.name, ch.On, ch.Off, ch.Payload)
		}
	}
	if topic, off := d.AvailabilityTopic(); topic != "shellies/shellyem-B9F3C1/online" || off != "false" {
		t.Errorf("AvailabilityTopic() = %q, %q; want shellies/shellyem-B9F3C1/online, false", topic, off)
	}
}
