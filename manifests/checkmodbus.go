package manifests

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
)

func isLine(m Model) bool { return m == ModelModbus || m == ModelSerialLine }

// modelsFor names the models a bus kind carries, from the table of models
// (so a new model is never left out of the message).
func modelsFor(k BusKind) string {
	var out []string
	for _, m := range models {
		if carries(k, Model(m)) {
			out = append(out, m)
		}
	}
	return oneOf(out)
}

// carries reports whether a bus of kind k carries a device of model m.
func carries(k BusKind, m Model) bool {
	switch {
	case k == BusI2C:
		return isI2C(m)
	case k == BusGPIO:
		return isGPIO(m) || declaredOn(m, BusGPIO)
	case isKernelBus(k):
		return declaredOn(m, k)
	}
	d, ok := Decl(m)
	return ok && d.on(k)
}

// busLine checks which line keys a bus of its kind may have.
func (c *checker) busLine(b Bus, path string) {
	field := func(k string) string { return join(path, k) }
	serialKeys := []string{"port", "baud", "data_bits", "parity", "stop_bits", "rs485"}
	switch {
	case b.Kind.IsNetwork():
		if !c.d.has(field("address")) && !c.d.bad[field("address")] {
			c.d.add(field("address"), ErrMissing, "address (want host:port, such as \"192.168.1.20:502\")")
		}
		c.notAllowed(path, append(serialKeys, "frame_gap"), "for a %s bus (only modbus_rtu and serial buses have a serial port)", b.Kind)
	case b.Kind.IsSerialPort():
		if b.Serial.Port == "" && !c.d.bad[field("port")] {
			c.d.add(field("port"), ErrMissing, "port (want the host's serial device, such as \"/dev/ttyUSB0\")")
		}
		if c.d.has(field("address")) {
			c.d.add(field("address"), ErrNotAllowed, "for a %s bus (a serial bus has a port, not an address)", b.Kind)
		}
		if b.Kind == BusSerial && c.d.has(field("frame_gap")) {
			c.d.add(field("frame_gap"), ErrNotAllowed, "for a serial bus (frame_gap is Modbus RTU timing)")
		}
	case b.Kind == BusI2C || b.Kind == BusGPIO:
		c.notAllowed(path, append(serialKeys, "address", "frame_gap", "retries"), "for an %s bus (only Modbus and serial buses have it)", b.Kind)
	}
	if b.Kind.IsSerialPort() || b.Kind.IsNetwork() {
		c.notAllowed(path, []string{"device"}, "for a %s bus (want address or port)", b.Kind)
	}
}

// noLineKeys reports modbus and serial_line keys on other models.
func (c *checker) noLineKeys(dev Device, path string) {
	if dev.Model != "" {
		c.notAllowed(path, []string{"unit_id", "max_span", "timeout", "request", "terminator", "response"}, "for model %s (only modbus and serial_line devices have it)", dev.Model)
	}
}

// lineDevice checks a modbus or serial_line device.
func (c *checker) lineDevice(dev Device, bus *Bus, path string, units map[string]string) {
	field := func(k string) string { return join(path, k) }
	what := "unit_id"
	if dev.Model == ModelSerialLine {
		what = "request and response"
	}
	c.notAllowed(path, []string{"address", "pin", "active_low", "pull"}, "for model %s (it has a %s)", dev.Model, what)
	if bus != nil {
		wantModbus := dev.Model == ModelModbus
		if wantModbus != bus.Kind.IsModbus() || (!wantModbus && bus.Kind != BusSerial) {
			c.d.add(field("model"), ErrNotAllowed, "on %s bus %q: %s (want %s)", bus.Kind, bus.Name, dev.Model, modelsFor(bus.Kind))
		}
	}
	if dev.Model == ModelSerialLine {
		c.notAllowed(path, []string{"unit_id", "max_span", "registers"}, "for model serial_line (only modbus devices have it)")
		if dev.Line.Request == "" && !c.d.bad[field("request")] {
			c.d.add(field("request"), ErrMissing, "request (want the text that asks for a reading, such as \"READ?\")")
		}
		if !c.d.has(field("response")) {
			c.d.add(field("response"), ErrMissing, "response (want a pattern with a named group per value)")
		}
		if dev.Sim != nil {
			c.notAllowed(field("sim"), []string{"values", "level", "profile"}, "for model serial_line (its simulator setting is response)")
			rp := join(field("sim"), "response")
			if re, err := regexp.Compile(dev.Line.Response); err == nil && dev.Line.Response != "" && c.d.has(rp) && !re.MatchString(dev.Sim.Response) {
				c.d.add(rp, ErrRange, ": %q does not match the device's response pattern %q", dev.Sim.Response, dev.Line.Response)
			}
		}
		return
	}
	c.notAllowed(path, []string{"request", "terminator", "response"}, "for model modbus (only serial_line devices have it)")
	switch {
	case !c.d.has(field("unit_id")):
		c.d.add(field("unit_id"), ErrMissing, "unit_id (want the device's Modbus unit id, such as 1)")
	case c.d.bad[field("unit_id")]:
	case bus != nil && bus.Kind != BusModbusTCP && (dev.UnitID < 1 || dev.UnitID > 247):
		c.d.add(field("unit_id"), ErrRange, ": %d (want 1..247 on a %s bus; 0 is broadcast)", dev.UnitID, bus.Kind)
	case dev.Bus != "":
		key := fmt.Sprintf("%s/%d", dev.Bus, dev.UnitID)
		c.once(units, key, field("unit_id"), "unit id %d on bus %q", dev.UnitID, dev.Bus)
	}
	rp := field("registers")
	if len(dev.ModbusRegisters) == 0 && !c.d.bad[rp] && !c.d.has(field("profile")) {
		c.d.add(rp, ErrMissing, "registers (want at least one register: {name, table, address, type}, or a profile: %s)", oneOf(deviceProfiles))
	}
	seen := map[string]string{}
	for i, r := range dev.ModbusRegisters {
		c.modbusRegister(r, index(rp, i), seen)
	}
	if dev.Sim != nil {
		c.modbusSim(dev, path)
	}
}

func (c *checker) modbusRegister(r ModbusRegister, path string, seen map[string]string) {
	field := func(k string) string { return join(path, k) }
	c.unique(seen, "register name", r.Name, field("name"))
	if r.Table == "" || r.Type == "" {
		return // missing or unknown: reported
	}
	if r.Table.IsBits() {
		if r.Type != modbusconf.DataBool {
			c.d.add(field("type"), ErrNotAllowed, "in the %s table: %s (a %s is one bit: want bool)", r.Table, r.Type, r.Table)
		}
		c.notAllowed(path, []string{"bit", "byte_order", "length", "scale", "offset"}, "in the %s table (a %s is one bit)", r.Table, r.Table)
	} else {
		switch {
		case r.Type == modbusconf.DataBool && !c.d.has(field("bit")):
			c.d.add(field("bit"), ErrMissing, "bit (a bool in a %s register is one of its bits: want 0..15)", r.Table)
		case r.Type != modbusconf.DataBool && c.d.has(field("bit")):
			c.d.add(field("bit"), ErrNotAllowed, "for type %s (only a bool takes one bit of a register)", r.Type)
		}
		if r.Type == modbusconf.DataBool && r.Writable && r.Table == modbusconf.TableHolding {
			c.d.add(field("writable"), ErrNotAllowed, "for a bit of a holding register (a read-modify-write would race other masters; use a coil)")
		}
	}
	if r.Type == modbusconf.DataString {
		if !c.d.has(field("length")) {
			c.d.add(field("length"), ErrMissing, "length (want the string's size in registers, two characters each)")
		}
		if r.Writable {
			c.d.add(field("writable"), ErrNotAllowed, "for a string (no capability type carries text yet)")
		}
	} else if c.d.has(field("length")) {
		c.d.add(field("length"), ErrNotAllowed, "for type %s (only a string has a length)", r.Type)
	}
	if r.Writable && (r.Table == modbusconf.TableDiscrete || r.Table == modbusconf.TableInput) {
		c.d.add(field("writable"), ErrNotAllowed, "in the %s table (it is read-only; want coil or holding)", r.Table)
	}
	if end := int(r.Address) + r.Words(); r.Words() > 0 && end > 65536 {
		c.d.add(field("address"), ErrRange, ": %d (a %s there would run past register 65535)", r.Address, r.Type)
	}
}

// modbusChannel checks a capability bound to a modbus register.
func (c *checker) modbusChannel(cp *Capability, dev *Device, path string) {
	chp := join(path, "read.channel")
	if !c.d.has(chp) {
		c.d.add(chp, ErrMissing, "channel (a register of %s: %s)", dev.Name, candidates("register", modbusRegisterNames(*dev)))
		return
	}
	r := findModbusRegister(*dev, cp.Read.Channel)
	if r == nil {
		c.d.add(chp, ErrBadReference, "register %q of device %q (%s)", cp.Read.Channel, dev.Name, candidates("register", modbusRegisterNames(*dev)))
		return
	}
	var want []ValueType
	switch r.Type {
	case modbusconf.DataBool:
		want = []ValueType{TypeBoolean}
	case modbusconf.DataString:
		c.d.add(chp, ErrNotAllowed, ": register %q is a string (no capability type carries text yet)", r.Name)
		return
	case "":
		return
	case modbusconf.DataFloat32, modbusconf.DataFloat64:
		want = []ValueType{TypeNumber, TypeInteger}
	default:
		// An enum: the register holds the index of the value in
		// do.constraints.enum (0 is the first).
		want = []ValueType{TypeNumber, TypeInteger, TypeEnum}
	}
	if slices.Contains(valueTypes, string(cp.Type)) && !slices.Contains(want, cp.Type) {
		c.d.add(join(path, "type"), ErrNotAllowed, "on a %s register: %s (want %s)", r.Type, cp.Type, oneOf(words(want...)))
	}
	if cp.Type == TypeEnum && r.Scale != 0 && r.Scale != 1 || cp.Type == TypeEnum && r.Offset != 0 {
		c.d.add(join(path, "type"), ErrNotAllowed, "enum on register %q with a scale or offset (the register holds the index of the value: leave scale 1, offset 0)", r.Name)
	}
}

// modbusSim checks a modbus device's simulator settings.
func (c *checker) modbusSim(dev Device, path string) {
	sp := join(path, "sim")
	c.notAllowed(sp, []string{"response"}, "for model modbus (only serial_line devices answer with a line)")
	c.notAllowed(sp, []string{"level"}, "for model modbus (only gpio models have a level)")
	for _, name := range sortedKeys(dev.Sim.Values) {
		if findModbusRegister(dev, name) == nil {
			c.d.add(join(join(sp, "values"), name), ErrBadReference, "register %q (%s)", name, candidates("register", modbusRegisterNames(dev)))
		}
	}
	need := map[SimProfile][]struct {
		name  string
		table Table
	}{
		ProfileVFD:         {{"speed_setpoint", modbusconf.TableHolding}, {"speed", ""}},
		ProfileEnergyMeter: {{"power", ""}, {"energy", ""}},
	}[dev.Sim.Profile]
	for _, n := range need {
		r := findModbusRegister(dev, n.name)
		switch {
		case r == nil:
			c.d.add(join(sp, "profile"), ErrMissing, "register %s (the %s profile drives registers named %s)", n.name, dev.Sim.Profile, profileRegisters(dev.Sim.Profile))
		case n.table != "" && r.Table != n.table:
			c.d.add(join(sp, "profile"), ErrNotAllowed, ": register %s is in the %s table (the %s profile wants it in %s)", n.name, r.Table, dev.Sim.Profile, n.table)
		}
	}
}

func profileRegisters(p SimProfile) string {
	if p == ProfileVFD {
		return "speed_setpoint (holding) and speed"
	}
	return "power and energy"
}

// simFan checks that name is a modbus device with the vfd profile.
func (c *checker) simFan(name, path string) bool {
	j, ok := c.devices[name]
	if !ok {
		if !c.d.bad["devices"] {
			c.d.add(path, ErrBadReference, "device %q (want a modbus device with sim profile vfd)", name)
		}
		return false
	}
	dev := c.m.Devices[j]
	if dev.Model != ModelModbus || dev.Sim == nil || dev.Sim.Profile != ProfileVFD {
		c.d.add(path, ErrNotAllowed, "here: %q is not a modbus device with sim profile vfd", name)
		return false
	}
	return true
}

func findModbusRegister(dev Device, name string) *ModbusRegister {
	return find(dev.ModbusRegisters, name, modbusRegName)
}
func modbusRegisterNames(dev Device) []string { return namesOf(dev.ModbusRegisters, modbusRegName) }
