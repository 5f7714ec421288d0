package manifests

import (
	"math"

	"github.com/goccy/go-yaml/ast"
)

// The keys of each mapping, in the order the documentation lists them.
var (
	manifestKeys    = []string{"version", "gateway", "description", "policy", "buses", "devices", "capabilities", "sim"}
	busKeys         = []string{"name", "kind", "device", "timeout", "address", "port", "baud", "data_bits", "parity", "stop_bits", "rs485", "frame_gap", "retries"}
	deviceKeys      = []string{"name", "bus", "model", "address", "pin", "active_low", "pull", "registers", "unit_id", "max_span", "timeout", "request", "terminator", "response", "sim"}
	modbusRegKeys   = []string{"name", "table", "address", "type", "byte_order", "bit", "length", "scale", "offset", "writable"}
	registerKeys    = []string{"name", "address", "type", "byte_order", "scale", "offset", "writable"}
	deviceSimKeys   = []string{"values", "level", "profile", "response"}
	capabilityKeys  = []string{"name", "description", "type", "unit", "ttl", "location", "tags", "read", "do", "health"}
	healthKeys      = []string{"plausible", "max_rate", "stuck_samples", "stuck_for", "on_device_error", "max_stale"}
	rangeKeys       = []string{"min", "max"}
	bindingKeys     = []string{"device", "channel"}
	actionKeys      = []string{"tool", "description", "side_effects", "compensable", "settle", "constraints", "depends_on", "safe_value"}
	constraintsKeys = []string{"min", "max", "step", "enum"}
	simKeys         = []string{"seed", "time_scale", "zones"}
	zoneKeys        = []string{"name", "temperature", "humidity", "outside", "leak_time_constant", "vent_time_constant", "heater_rate", "noise", "sensors", "heaters", "vents", "fans", "fan_time_constant"}
)

// The closed sets of values, as the manifest spells them.
var (
	busKinds   = []string{string(BusI2C), string(BusGPIO), string(BusModbusTCP), string(BusModbusRTU), string(BusModbusRTUTCP), string(BusSerial)}
	models     = []string{string(ModelSHT3x), string(ModelRegisters), string(ModelGPIOIn), string(ModelGPIOOut), string(ModelModbus), string(ModelSerialLine)}
	parities   = []string{string(ParityNone), string(ParityEven), string(ParityOdd)}
	rs485Modes = []string{string(RS485None), string(RS485Kernel), string(RS485RTS)}
	tables     = []string{string(TableCoil), string(TableDiscrete), string(TableHolding), string(TableInput)}
	dataTypes  = []string{string(DataBool), string(DataInt16), string(DataUint16), string(DataInt32), string(DataUint32), string(DataInt64), string(DataUint64), string(DataFloat32), string(DataFloat64), string(DataString)}
	wordOrders = []string{string(OrderABCD), string(OrderDCBA), string(OrderBADC), string(OrderCDAB)}
	profiles   = []string{string(ProfileVFD), string(ProfileEnergyMeter)}
	pulls      = []string{string(PullNone), string(PullUp), string(PullDown)}
	regTypes   = []string{string(RegUint8), string(RegInt8), string(RegUint16), string(RegInt16), string(RegUint32), string(RegInt32), string(RegFloat32)}
	byteOrders = []string{string(BigEndian), string(LittleEndian)}
	valueTypes = []string{string(TypeNumber), string(TypeInteger), string(TypeBoolean), string(TypeEnum)}
	deviceErrs = []string{string(DeviceErrorIsError), string(DeviceErrorIsDegraded)}
)

// I2C addresses outside 0x03..0x77 are reserved by the I2C specification.
const (
	minI2CAddress = 0x03
	maxI2CAddress = 0x77
)

// required reports a key that the mapping at path lacks.
func (d *decoder) required(f map[string]ast.Node, path, key, want string) {
	if f != nil && !d.has(join(path, key)) {
		d.add(join(path, key), ErrMissing, "%s (want %s)", key, want)
	}
}

// requiredStr decodes a string that must be present and not empty.
func (d *decoder) requiredStr(f map[string]ast.Node, path, key, want string) string {
	p := join(path, key)
	s, ok := d.str(f[key], p)
	if f != nil && (!d.has(p) || ok && s == "") {
		d.add(p, ErrMissing, "%s (want %s)", key, want)
	}
	return s
}

// document returns the top-level keys of a file's single document, which
// must be a mapping of known keys (example names two of them for the error
// message). An empty file is an empty mapping: it lacks everything. It
// reports false, after reporting why, when the document is no mapping.
func (d *decoder) document(root ast.Node, known []string, example string) (map[string]ast.Node, bool) {
	if a, ok := d.peek(root).(*ast.AliasNode); ok {
		d.addAt(a, "", ErrSyntax, ": the document is an alias (want a mapping of keys such as %s)", example)
		return nil, false
	}
	switch n := d.resolve(root, "").(type) {
	case nil, *ast.NullNode:
		return map[string]ast.Node{}, true
	case *ast.MappingNode:
		f, _ := d.fields(n, "", known...)
		return f, true
	default:
		d.addAt(n, "", ErrSyntax, ": the document is %s (want a mapping of keys such as %s)", describe(n), example)
		return nil, false
	}
}

func (d *decoder) manifest(root ast.Node) *Manifest {
	m := &Manifest{}
	f, ok := d.document(root, manifestKeys, "version and gateway")
	if !ok {
		return m
	}
	if v, ok := d.integer(f["version"], "version"); ok {
		m.Version = int(v)
		if v != 1 {
			d.add("version", ErrUnknownValue, "%d (want 1)", v)
		}
	}
	d.required(f, "", "version", "1")
	if s, ok := d.str(f["gateway"], "gateway"); ok {
		m.Gateway = s
		if !gatewayRE.MatchString(s) {
			d.add("gateway", ErrBadName, "%q (want lower case letters, digits, _ and -, starting with a letter, such as \"greenhouse-1\")", s)
		}
	}
	d.required(f, "", "gateway", `a name for this gateway, such as "greenhouse-1"`)
	m.Description, _ = d.str(f["description"], "description")
	m.Policy = d.policyName(f["policy"])
	for i, n := range d.seq(f["buses"], "buses") {
		m.Buses = append(m.Buses, d.bus(n, index("buses", i)))
	}
	for i, n := range d.seq(f["devices"], "devices") {
		m.Devices = append(m.Devices, d.device(n, index("devices", i)))
	}
	for i, n := range d.seq(f["capabilities"], "capabilities") {
		m.Capabilities = append(m.Capabilities, d.capability(n, index("capabilities", i)))
	}
	m.Sim = d.sim(f["sim"], "sim")
	return m
}

func (d *decoder) bus(n ast.Node, path string) Bus {
	var b Bus
	f, ok := d.fields(n, path, busKeys...)
	if !ok {
		d.missingItem(n, path)
		return b
	}
	b.Name, _ = d.name(f["name"], join(path, "name"))
	d.required(f, path, "name", "a lower_snake_case name")
	kind, _ := d.oneOfValue(f["kind"], join(path, "kind"), busKinds...)
	b.Kind = BusKind(kind)
	d.required(f, path, "kind", oneOf(busKinds))
	b.Device, _ = d.str(f["device"], join(path, "device"))
	b.Timeout = d.duration(f["timeout"], join(path, "timeout"))
	d.busLine(f, path, &b)
	return b
}

// missingItem reports a null list item, which would otherwise vanish.
func (d *decoder) missingItem(n ast.Node, path string) {
	if n == nil || isNull(d.peek(n)) {
		d.add(path, ErrMissing, "value (want a mapping)")
	}
}

func (d *decoder) device(n ast.Node, path string) Device {
	var dev Device
	f, ok := d.fields(n, path, deviceKeys...)
	if !ok {
		d.missingItem(n, path)
		return dev
	}
	dev.Name, _ = d.name(f["name"], join(path, "name"))
	d.required(f, path, "name", "a lower_snake_case name")
	dev.Bus = d.requiredStr(f, path, "bus", "the name of a bus")
	model, _ := d.oneOfValue(f["model"], join(path, "model"), models...)
	dev.Model = Model(model)
	d.required(f, path, "model", oneOf(models))
	if a, ok := d.integer(f["address"], join(path, "address")); ok {
		if a < minI2CAddress || a > maxI2CAddress {
			d.add(join(path, "address"), ErrRange, ": %s (want a 7-bit I2C address, 0x03..0x77)", hex(a))
		} else {
			dev.Address = uint16(a)
		}
	}
	dev.Pin, _ = d.str(f["pin"], join(path, "pin"))
	dev.ActiveLow = d.boolean(f["active_low"], join(path, "active_low"))
	pull, _ := d.oneOfValue(f["pull"], join(path, "pull"), pulls...)
	dev.Pull = Pull(pull)
	for i, rn := range d.seq(f["registers"], join(path, "registers")) {
		if dev.Model == ModelModbus {
			dev.ModbusRegisters = append(dev.ModbusRegisters, d.modbusRegister(rn, index(join(path, "registers"), i)))
		} else {
			dev.Registers = append(dev.Registers, d.register(rn, index(join(path, "registers"), i)))
		}
	}
	d.deviceLine(f, path, &dev)
	dev.Sim = d.deviceSim(f["sim"], join(path, "sim"))
	return dev
}

func (d *decoder) register(n ast.Node, path string) Register {
	r := Register{ByteOrder: BigEndian, Scale: 1}
	f, ok := d.fields(n, path, registerKeys...)
	if !ok {
		d.missingItem(n, path)
		return r
	}
	r.Name, _ = d.name(f["name"], join(path, "name"))
	d.required(f, path, "name", "a lower_snake_case name")
	if a, ok := d.integer(f["address"], join(path, "address")); ok {
		if a < 0 || a > math.MaxUint8 {
			d.add(join(path, "address"), ErrRange, ": %s (want a register address, 0x00..0xff)", hex(a))
		} else {
			r.Address = uint8(a)
		}
	}
	d.required(f, path, "address", "the register address, 0x00..0xff")
	typ, _ := d.oneOfValue(f["type"], join(path, "type"), regTypes...)
	r.Type = RegType(typ)
	d.required(f, path, "type", oneOf(regTypes))
	if bo, ok := d.oneOfValue(f["byte_order"], join(path, "byte_order"), byteOrders...); ok {
		r.ByteOrder = ByteOrder(bo)
	}
	if s, ok := d.number(f["scale"], join(path, "scale")); ok {
		if s == 0 {
			d.add(join(path, "scale"), ErrRange, ": 0 (want a non-zero factor; leave scale out for 1)")
		} else {
			r.Scale = s
		}
	}
	r.Offset, _ = d.number(f["offset"], join(path, "offset"))
	r.Writable = d.boolean(f["writable"], join(path, "writable"))
	return r
}

func (d *decoder) deviceSim(n ast.Node, path string) *DeviceSim {
	f, ok := d.fields(n, path, deviceSimKeys...)
	if !ok {
		return nil
	}
	s := &DeviceSim{}
	vp := join(path, "values")
	for _, mv := range d.entries(f["values"], vp) {
		key := keyString(mv.Key)
		if v, ok := d.number(mv.Value, join(vp, key)); ok {
			if s.Values == nil {
				s.Values = make(map[string]float64)
			}
			s.Values[key] = v
		}
	}
	s.Level = d.boolean(f["level"], join(path, "level"))
	p, _ := d.oneOfValue(f["profile"], join(path, "profile"), profiles...)
	s.Profile = SimProfile(p)
	s.Response, _ = d.str(f["response"], join(path, "response"))
	return s
}

func (d *decoder) capability(n ast.Node, path string) Capability {
	var c Capability
	f, ok := d.fields(n, path, capabilityKeys...)
	if !ok {
		d.missingItem(n, path)
		return c
	}
	c.Name, _ = d.name(f["name"], join(path, "name"))
	d.required(f, path, "name", "a lower_snake_case name")
	c.Description, _ = d.str(f["description"], join(path, "description"))
	typ, _ := d.oneOfValue(f["type"], join(path, "type"), valueTypes...)
	c.Type = ValueType(typ)
	d.required(f, path, "type", oneOf(valueTypes))
	c.Unit, _ = d.str(f["unit"], join(path, "unit"))
	c.TTL = d.duration(f["ttl"], join(path, "ttl"))
	c.Location, _ = d.str(f["location"], join(path, "location"))
	c.Tags = d.strs(f["tags"], join(path, "tags"))
	rp := join(path, "read")
	if rf, ok := d.fields(f["read"], rp, bindingKeys...); ok {
		c.Read.Device = d.requiredStr(rf, rp, "device", "the name of a device")
		c.Read.Channel, _ = d.str(rf["channel"], join(rp, "channel"))
	}
	d.required(f, path, "read", "{device: ..., channel: ...}")
	c.Do = d.action(f["do"], join(path, "do"))
	c.Health = d.health(f["health"], join(path, "health"))
	return c
}

func (d *decoder) health(n ast.Node, path string) Health {
	var h Health
	f, ok := d.fields(n, path, healthKeys...)
	if !ok {
		return h
	}
	pp := join(path, "plausible")
	if rf, ok := d.fields(f["plausible"], pp, rangeKeys...); ok {
		lo, okLo := d.number(rf["min"], join(pp, "min"))
		hi, okHi := d.number(rf["max"], join(pp, "max"))
		d.required(rf, pp, "min", "the lowest plausible value")
		d.required(rf, pp, "max", "the highest plausible value")
		switch {
		case okLo && okHi && lo > hi:
			d.add(join(pp, "max"), ErrRange, ": %g is less than min %g", hi, lo)
		case okLo && okHi:
			h.Plausible = &Range{Min: lo, Max: hi}
		}
	}
	if r, ok := d.number(f["max_rate"], join(path, "max_rate")); ok {
		if r <= 0 {
			d.add(join(path, "max_rate"), ErrRange, ": %g (want more than 0, in the capability's unit per second)", r)
		} else {
			h.MaxRate = r
		}
	}
	if n, ok := d.integer(f["stuck_samples"], join(path, "stuck_samples")); ok {
		if n < 2 || n > 1000 {
			d.add(join(path, "stuck_samples"), ErrRange, ": %d (want 2..1000 samples)", n)
		} else {
			h.StuckSamples = int(n)
		}
	}
	h.StuckFor = d.duration(f["stuck_for"], join(path, "stuck_for"))
	if de, ok := d.oneOfValue(f["on_device_error"], join(path, "on_device_error"), deviceErrs...); ok {
		h.OnDeviceError = OnDeviceError(de)
	}
	h.MaxStale = d.duration(f["max_stale"], join(path, "max_stale"))
	return h
}

func (d *decoder) action(n ast.Node, path string) *Action {
	f, ok := d.fields(n, path, actionKeys...)
	if !ok {
		return nil
	}
	a := &Action{}
	if s, ok := d.str(f["tool"], join(path, "tool")); ok {
		a.Tool = s
		if len(s) < 4 || s[:3] != "do_" || !nameRE.MatchString(s[3:]) {
			d.add(join(path, "tool"), ErrBadName, "%q (want do_ and lower_snake_case, such as \"do_set_heater\")", s)
		}
	}
	d.required(f, path, "tool", `a tool name such as "do_set_heater"`)
	a.Description, _ = d.str(f["description"], join(path, "description"))
	a.SideEffects = d.strs(f["side_effects"], join(path, "side_effects"))
	a.Compensable = d.boolean(f["compensable"], join(path, "compensable"))
	a.Settle = d.duration(f["settle"], join(path, "settle"))
	if a.Settle > MaxSettle {
		d.addAt(f["settle"], join(path, "settle"), ErrRange, ": %s (want at most %s; the call waits this long before reading back)", a.Settle, MaxSettle)
	}
	cp := join(path, "constraints")
	if cf, ok := d.fields(f["constraints"], cp, constraintsKeys...); ok {
		for _, k := range []struct {
			key string
			dst **float64
		}{{"min", &a.Constraints.Min}, {"max", &a.Constraints.Max}, {"step", &a.Constraints.Step}} {
			if v, ok := d.number(cf[k.key], join(cp, k.key)); ok {
				*k.dst = &v
			}
		}
		a.Constraints.Enum = d.strs(cf["enum"], join(cp, "enum"))
	}
	a.DependsOn = d.strs(f["depends_on"], join(path, "depends_on"))
	if d.has(join(path, "safe_value")) {
		a.SafeValue = d.scalar(f["safe_value"], join(path, "safe_value"))
	}
	return a
}

func (d *decoder) sim(n ast.Node, path string) *Sim {
	f, ok := d.fields(n, path, simKeys...)
	if !ok {
		return nil
	}
	s := &Sim{}
	s.Seed, _ = d.integer(f["seed"], join(path, "seed"))
	if ts, ok := d.number(f["time_scale"], join(path, "time_scale")); ok {
		if ts < 0 {
			d.add(join(path, "time_scale"), ErrRange, ": %g (want 0 or more; 0 means 1)", ts)
		} else {
			s.TimeScale = ts
		}
	}
	for i, zn := range d.seq(f["zones"], join(path, "zones")) {
		s.Zones = append(s.Zones, d.zone(zn, index(join(path, "zones"), i)))
	}
	return s
}

func (d *decoder) zone(n ast.Node, path string) Zone {
	var z Zone
	f, ok := d.fields(n, path, zoneKeys...)
	if !ok {
		d.missingItem(n, path)
		return z
	}
	z.Name, _ = d.name(f["name"], join(path, "name"))
	d.required(f, path, "name", "a lower_snake_case name")
	z.Temperature, _ = d.number(f["temperature"], join(path, "temperature"))
	if h, ok := d.number(f["humidity"], join(path, "humidity")); ok {
		if h < 0 || h > 100 {
			d.add(join(path, "humidity"), ErrRange, ": %g (want 0..100 %%)", h)
		} else {
			z.Humidity = h
		}
	}
	z.Outside, _ = d.number(f["outside"], join(path, "outside"))
	z.LeakTimeConstant = d.duration(f["leak_time_constant"], join(path, "leak_time_constant"))
	z.VentTimeConstant = d.duration(f["vent_time_constant"], join(path, "vent_time_constant"))
	if r, ok := d.number(f["heater_rate"], join(path, "heater_rate")); ok {
		if r <= 0 {
			d.add(join(path, "heater_rate"), ErrRange, ": %g (want more than 0 °C per minute; leave it out for 0.5)", r)
		} else {
			z.HeaterRate = r
		}
	}
	if v, ok := d.number(f["noise"], join(path, "noise")); ok {
		if v < 0 {
			d.add(join(path, "noise"), ErrRange, ": %g (want 0 or more °C)", v)
		} else {
			z.Noise = v
		}
	}
	z.Sensors = d.strs(f["sensors"], join(path, "sensors"))
	z.Heaters = d.strs(f["heaters"], join(path, "heaters"))
	z.Vents = d.strs(f["vents"], join(path, "vents"))
	z.Fans = d.strs(f["fans"], join(path, "fans"))
	z.FanTimeConstant = d.duration(f["fan_time_constant"], join(path, "fan_time_constant"))
	return z
}
