package manifests

import (
	"fmt"
	"slices"

	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
)

// Device profiles: the register maps of Modbus devices people buy, so that
// a manifest says `profile: eastron_sdm120` instead of writing the map. A
// profile fills a modbus device's registers at load; registers the device
// declares itself are kept, and replace the profile's register of the same
// name or at the same table and address (to rename a channel or change its
// scale). The words are lower_snake_case, as the manifest's other words
// (models, sim profiles, presets) are.

// DeviceProfile names a register map a modbus device can take instead of
// declaring its own.
type DeviceProfile string

// Device profiles.
const (
	// ProfileEastronSDM120 is an Eastron SDM120 single-phase energy meter:
	// input registers (function 4), IEEE-754 float32, big endian (ABCD).
	// Channels: voltage (V), current (A), power (W), frequency (Hz),
	// import_energy and total_energy (kWh).
	ProfileEastronSDM120 DeviceProfile = "eastron_sdm120"
	// ProfileEastronSDM630 is an Eastron SDM630 three-phase energy meter,
	// encoded as the SDM120. Channels: voltage_l1..l3 (V), current_l1..l3
	// (A), power_l1..l3 and power, the system total (W), frequency (Hz),
	// import_energy and total_energy (kWh).
	ProfileEastronSDM630 DeviceProfile = "eastron_sdm630"
	// ProfileRelayBoard4, 8 and 16 are the common Modbus RTU relay boards:
	// relay n is coil n-1, switched with function 5 and read back with
	// function 1. Channels: relay1..relayN (booleans, writable).
	ProfileRelayBoard4  DeviceProfile = "relay_board_4"
	ProfileRelayBoard8  DeviceProfile = "relay_board_8"
	ProfileRelayBoard16 DeviceProfile = "relay_board_16"
)

// deviceProfiles are the profiles in the order messages list them.
var deviceProfiles = words(ProfileEastronSDM120, ProfileEastronSDM630, ProfileRelayBoard4, ProfileRelayBoard8, ProfileRelayBoard16)

// DeviceProfiles returns the known device profiles.
func DeviceProfiles() []DeviceProfile {
	out := make([]DeviceProfile, len(deviceProfiles))
	for i, p := range deviceProfiles {
		out[i] = DeviceProfile(p)
	}
	return out
}

// IsMeter reports whether p is an energy meter (an Eastron SDM).
func (p DeviceProfile) IsMeter() bool {
	return p == ProfileEastronSDM120 || p == ProfileEastronSDM630
}

// Relays returns how many relays a relay board profile has, 0 for other
// profiles.
func (p DeviceProfile) Relays() int {
	switch p {
	case ProfileRelayBoard4:
		return 4
	case ProfileRelayBoard8:
		return 8
	case ProfileRelayBoard16:
		return 16
	}
	return 0
}

// sdm is one float32 input register of an Eastron SDM meter, at its PDU
// address (the datasheet's 30001 + address).
type sdm struct {
	name    string
	address uint16
}

// The Eastron register maps, from the SDM120 and SDM630 Modbus protocol
// documents (input registers, two per value, float32 ABCD).
var (
	sdm120Map = []sdm{
		{"voltage", 0x0000}, {"current", 0x0006}, {"power", 0x000C},
		{"frequency", 0x0046}, {"import_energy", 0x0048}, {"total_energy", 0x0156},
	}
	sdm630Map = []sdm{
		{"voltage_l1", 0x0000}, {"voltage_l2", 0x0002}, {"voltage_l3", 0x0004},
		{"current_l1", 0x0006}, {"current_l2", 0x0008}, {"current_l3", 0x000A},
		{"power_l1", 0x000C}, {"power_l2", 0x000E}, {"power_l3", 0x0010},
		{"power", 0x0034}, {"frequency", 0x0046},
		{"import_energy", 0x0048}, {"total_energy", 0x0156},
	}
)

// ProfileRegisters returns the register map of profile p, with the
// defaults Load fills (ByteOrder ABCD, Bit -1, Scale 1); nil for an
// unknown profile.
func ProfileRegisters(p DeviceProfile) []ModbusRegister {
	var table []sdm
	switch p {
	case ProfileEastronSDM120:
		table = sdm120Map
	case ProfileEastronSDM630:
		table = sdm630Map
	}
	var out []ModbusRegister
	for _, r := range table {
		out = append(out, ModbusRegister{Name: r.name, Table: modbusconf.TableInput, Address: r.address,
			Type: modbusconf.DataFloat32, ByteOrder: modbusconf.OrderABCD, Bit: -1, Scale: 1})
	}
	for i := range p.Relays() {
		out = append(out, ModbusRegister{Name: fmt.Sprintf("relay%d", i+1), Table: modbusconf.TableCoil, Address: uint16(i),
			Type: modbusconf.DataBool, ByteOrder: modbusconf.OrderABCD, Bit: -1, Scale: 1, Writable: true})
	}
	return out
}

// deviceProfile decodes a device's profile and fills its register map:
// the device's own registers first (so their positions in messages are
// the manifest's), then the profile's that none of them replaces.
func (o obj) deviceProfile(dev *Device) {
	if !o.has("profile") {
		return
	}
	if !enum(o, "profile", &dev.Profile, deviceProfiles, false) {
		dev.Profile = ""
		return
	}
	if !slices.Contains(models, string(dev.Model)) {
		dev.Profile = ""
		return // the model is missing or unknown: reported
	}
	if dev.Model != ModelModbus {
		hint := ""
		if dev.Model == ModelMQTT {
			hint = "; an mqtt device takes mqtt.preset, such as shelly"
		}
		o.add("profile", ErrNotAllowed, "for model %s (a profile is a modbus device's register map%s)", dev.Model, hint)
		dev.Profile = ""
		return
	}
	dev.ModbusRegisters = mergeProfile(dev.ModbusRegisters, ProfileRegisters(dev.Profile))
}

// mergeProfile returns own followed by the registers of profile that no
// register of own replaces (same name, or same table and first address).
func mergeProfile(own, profile []ModbusRegister) []ModbusRegister {
	out := append([]ModbusRegister(nil), own...)
	for _, p := range profile {
		replaced := false
		for _, r := range own {
			if r.Name == p.Name || r.Table == p.Table && r.Address == p.Address {
				replaced = true
				break
			}
		}
		if !replaced {
			out = append(out, p)
		}
	}
	return out
}
