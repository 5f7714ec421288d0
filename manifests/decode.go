package manifests

import (
	"errors"
	"fmt"
	"math"
	"net"
	"regexp"
	"slices"
	"strconv"

	"github.com/goccy/go-yaml/ast"
	"github.com/promcp/promcp-device/drivers/i2c/i2cconf"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
)

// The keys of each mapping, in the order the documentation lists them.
var (
	manifestKeys    = []string{"version", "gateway", "description", "policy", "buses", "devices", "capabilities", "groups", "sim", "jobs"}
	busKeys         = []string{"name", "kind", "device", "timeout", "address", "port", "baud", "data_bits", "parity", "stop_bits", "rs485", "frame_gap", "retries", "mqtt", "speed"}
	deviceKeys      = slices.Concat([]string{"name", "bus", "model", "address", "pin", "active_low", "pull", "registers", "profile", "unit_id", "max_span", "timeout", "request", "terminator", "response", "mqtt", "sim", "inputs", "pins"}, declaredKeys(), []string{"rom", "channel", "frequency", "vref", "edge", "debounce", "per_pulse"})
	modbusRegKeys   = []string{"name", "table", "address", "type", "byte_order", "bit", "length", "scale", "offset", "writable"}
	registerKeys    = []string{"name", "address", "type", "byte_order", "scale", "offset", "writable"}
	deviceSimKeys   = []string{"values", "level", "profile", "response"}
	capabilityKeys  = []string{"name", "description", "type", "unit", "ttl", "location", "tags", "read", "do", "health", "observe", "history"}
	healthKeys      = []string{"plausible", "max_rate", "stuck_samples", "stuck_for", "on_device_error", "max_stale"}
	rangeKeys       = []string{"min", "max"}
	bindingKeys     = []string{"device", "channel"}
	actionKeys      = []string{"tool", "description", "side_effects", "compensable", "settle", "constraints", "depends_on", "safe_value"}
	constraintsKeys = []string{"min", "max", "step", "enum"}
	simKeys         = []string{"seed", "time_scale", "zones"}
	groupKeys       = []string{"name", "description", "capabilities", "location", "tags"}
	zoneKeys        = []string{"name", "temperature", "humidity", "outside", "leak_time_constant", "vent_time_constant", "heater_rate", "noise", "sensors", "heaters", "vents", "fans", "fan_time_constant"}
)

// The closed sets of values, as the manifest spells them.
var (
	busKinds   = words(BusI2C, BusGPIO, BusModbusTCP, BusModbusRTU, BusModbusRTUTCP, BusSerial, BusMQTT, BusOneWire, BusPWM, BusSPI)
	models     = declaredWords()
	parities   = words(modbusconf.ParityNone, modbusconf.ParityEven, modbusconf.ParityOdd)
	rs485Modes = words(modbusconf.RS485None, modbusconf.RS485Kernel, modbusconf.RS485RTS)
	tables     = words(modbusconf.TableCoil, modbusconf.TableDiscrete, modbusconf.TableHolding, modbusconf.TableInput)
	dataTypes  = words(modbusconf.DataBool, modbusconf.DataInt16, modbusconf.DataUint16, modbusconf.DataInt32, modbusconf.DataUint32, modbusconf.DataInt64, modbusconf.DataUint64, modbusconf.DataFloat32, modbusconf.DataFloat64, modbusconf.DataString)
	wordOrders = words(modbusconf.OrderABCD, modbusconf.OrderDCBA, modbusconf.OrderBADC, modbusconf.OrderCDAB)
	profiles   = words(ProfileVFD, ProfileEnergyMeter)
	pulls      = words(PullNone, PullUp, PullDown)
	regTypes   = words(i2cconf.RegUint8, i2cconf.RegInt8, i2cconf.RegUint16, i2cconf.RegInt16, i2cconf.RegUint32, i2cconf.RegInt32, i2cconf.RegFloat32)
	byteOrders = words(i2cconf.BigEndian, i2cconf.LittleEndian)
	valueTypes = words(TypeNumber, TypeInteger, TypeBoolean, TypeEnum)
	deviceErrs = words(DeviceErrorIsError, DeviceErrorIsDegraded)
)

func words[T ~string](ws ...T) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = string(w)
	}
	return out
}

// I2C addresses outside 0x03..0x77 are reserved by the I2C specification.
const (
	minI2CAddress = 0x03
	maxI2CAddress = 0x77
)

func (d *decoder) manifest(root ast.Node) *Manifest {
	m := &Manifest{}
	o, ok := d.document(root, manifestKeys, "version and gateway")
	if !ok {
		return m
	}
	m.Version = o.version()
	if s, ok := o.strOK("gateway"); ok {
		m.Gateway = s
		if !gatewayRE().MatchString(s) {
			o.add("gateway", ErrBadName, "%q (want lower case letters, digits, _ and -, starting with a letter, such as \"greenhouse-1\")", s)
		}
	}
	o.require("gateway", `a name for this gateway, such as "greenhouse-1"`)
	m.Description = o.str("description")
	m.Policy = d.policyName(o.f["policy"])
	m.Buses = list(o, "buses", busKeys, obj.bus)
	m.Devices = list(o, "devices", deviceKeys, obj.device)
	m.Capabilities = list(o, "capabilities", capabilityKeys, obj.capability)
	m.Groups = list(o, "groups", groupKeys, obj.group)
	m.Sim = opt(o, "sim", simKeys, obj.sim)
	m.Jobs = list(o, "jobs", jobKeys, obj.job)
	return m
}

// busAddress checks a network bus's host:port, saying which part is
// wrong: a missing port is missing, not out of range.
func (o obj) busAddress(s string, k BusKind) bool {
	example := `"192.168.1.20:502"`
	host, port, err := net.SplitHostPort(s)
	var addrErr *net.AddrError
	switch {
	case errors.As(err, &addrErr) && addrErr.Err == "missing port in address":
		if k.IsModbus() {
			example = strconv.Quote(s+":502") + ", 502 being Modbus TCP's port"
		}
		o.add("address", ErrMissing, "the port in %q (want host:port, such as %s)", s, example)
	case err != nil:
		o.add("address", ErrUnknownValue, "%q (want host:port, such as %s)", s, example)
	case host == "":
		o.add("address", ErrMissing, "the host in %q (want host:port, such as %s)", s, example)
	case !validPort(port):
		o.add("address", ErrRange, ": port %s in %q (want 1..65535)", port, s)
	default:
		return true
	}
	return false
}

func (o obj) bus(b *Bus) {
	b.Name = o.name()
	enum(o, "kind", &b.Kind, busKinds, true)
	b.Device = o.str("device")
	b.Timeout = o.dur("timeout")
	if s, ok := o.strOK("address"); ok && o.busAddress(s, b.Kind) {
		b.Address = s
	}
	sp := &b.Serial
	sp.Port = o.str("port")
	if b.Kind.IsSerialPort() {
		sp.Baud, sp.DataBits, sp.StopBits = DefaultBaud, DefaultDataBits, DefaultStopBits
		sp.Parity, sp.RS485 = modbusconf.ParityNone, modbusconf.RS485None
	}
	intIn(o, "baud", &sp.Baud, 300, 4000000, ": %d (want 300..4000000 bits per second)")
	intIn(o, "data_bits", &sp.DataBits, 7, 8, ": %d (want 7 or 8)")
	enum(o, "parity", &sp.Parity, parities, false)
	intIn(o, "stop_bits", &sp.StopBits, 1, 2, ": %d (want 1 or 2)")
	enum(o, "rs485", &sp.RS485, rs485Modes, false)
	sp.FrameGap = o.dur("frame_gap")
	if b.Kind.IsModbus() || b.Kind == BusSerial {
		b.Retries = DefaultRetries
	}
	intIn(o, "retries", &b.Retries, 0, 10, ": %d (want 0..10)")
	b.MQTT = opt(o, "mqtt", mqttBusKeys, obj.mqttBus)
	o.busExt(b)
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 0 && n <= 65535
}

func (o obj) device(dev *Device) {
	dev.Name = o.name()
	dev.Bus = o.requiredStr("bus", "the name of a bus")
	enum(o, "model", &dev.Model, models, true)
	intIn(o, "address", &dev.Address, minI2CAddress, maxI2CAddress, ": %x (want a 7-bit I2C address, 0x03..0x77)")
	dev.Pin = o.pin("pin")
	dev.ActiveLow = o.boolean("active_low")
	enum(o, "pull", &dev.Pull, pulls, false)
	if dev.Model == ModelModbus {
		dev.ModbusRegisters = list(o, "registers", modbusRegKeys, obj.modbusRegister)
	} else {
		dev.Registers = list(o, "registers", registerKeys, obj.register)
	}
	intIn(o, "unit_id", &dev.UnitID, 0, 255, ": %d (want a Modbus unit id, 1..247 on a serial line, 0..255 on TCP)")
	intIn(o, "max_span", &dev.MaxSpan, 0, MaxReadRegisters, ": %d (want 0..%d registers per read)", MaxReadRegisters)
	dev.Timeout = o.dur("timeout")
	dev.Line.Request = o.str("request")
	if dev.Model == ModelSerialLine {
		dev.Line.Terminator = "\r\n"
	}
	if s, ok := o.strOK("terminator"); ok {
		if s == "" {
			o.add("terminator", ErrRange, `: "" (want the bytes that end a line, such as "\r\n")`)
		} else {
			dev.Line.Terminator = s
		}
	}
	if s, ok := o.strOK("response"); ok {
		if re, err := regexp.Compile(s); err != nil {
			o.add("response", ErrSyntax, ": %q is not a regular expression: %v", s, err)
		} else if len(channelsOf(re)) == 0 {
			o.add("response", ErrMissing, "named group in %q (want a group per value, such as \"T=(?P<temperature>[-0-9.]+)\")", s)
		} else {
			dev.Line.Response = s
		}
	}
	dev.MQTT = opt(o, "mqtt", mqttDeviceKeys, obj.mqttDevice)
	o.chip(dev)
	dev.Sim = opt(o, "sim", deviceSimKeys, obj.deviceSim)
	o.deviceExt(dev)
	o.deviceProfile(dev)
}

// channelsOf returns the named groups of a serial_line response pattern.
func channelsOf(re *regexp.Regexp) []string {
	var names []string
	for _, n := range re.SubexpNames() {
		if n != "" {
			names = append(names, n)
		}
	}
	return names
}

// LineChannels returns the channels of a serial_line device: the named
// groups of its response pattern.
func LineChannels(l LineInstrument) []string {
	re, err := regexp.Compile(l.Response)
	if err != nil {
		return nil
	}
	return channelsOf(re)
}

func (o obj) register(r *Register) {
	*r = Register{ByteOrder: i2cconf.BigEndian, Scale: 1}
	r.Name = o.name()
	intIn(o, "address", &r.Address, 0, math.MaxUint8, ": %x (want a register address, 0x00..0xff)")
	o.require("address", "the register address, 0x00..0xff")
	enum(o, "type", &r.Type, regTypes, true)
	enum(o, "byte_order", &r.ByteOrder, byteOrders, false)
	r.Scale, r.Offset, r.Writable = o.scale(), o.num("offset"), o.boolean("writable")
}

func (o obj) modbusRegister(r *ModbusRegister) {
	*r = ModbusRegister{ByteOrder: modbusconf.OrderABCD, Bit: -1, Scale: 1}
	r.Name = o.name()
	enum(o, "table", &r.Table, tables, true)
	intIn(o, "address", &r.Address, 0, math.MaxUint16, ": %d (want a 0-based PDU address, 0..65535)")
	o.require("address", "the 0-based PDU address, 0..65535 (holding register 40001 is 0)")
	enum(o, "type", &r.Type, dataTypes, true)
	enum(o, "byte_order", &r.ByteOrder, wordOrders, false)
	intIn(o, "bit", &r.Bit, 0, 15, ": %d (want 0..15, 0 the least significant)")
	intIn(o, "length", &r.Length, 1, MaxReadRegisters, ": %d (want 1..%d registers, two characters each)", MaxReadRegisters)
	r.Scale, r.Offset, r.Writable = o.scale(), o.num("offset"), o.boolean("writable")
}

// scale decodes a register's non-zero scale factor, 1 when absent.
func (o obj) scale() float64 {
	s, ok := o.numOK("scale")
	switch {
	case ok && s == 0:
		o.add("scale", ErrRange, ": 0 (want a non-zero factor; leave scale out for 1)")
	case ok:
		return s
	}
	return 1
}

func (o obj) deviceSim(s *DeviceSim) {
	vp := o.at("values")
	for _, mv := range o.d.entries(o.f["values"], vp) {
		key := keyString(mv.Key)
		if v, ok := o.d.number(mv.Value, join(vp, key)); ok {
			if s.Values == nil {
				s.Values = make(map[string]float64)
			}
			s.Values[key] = v
		}
	}
	s.Level = o.boolean("level")
	enum(o, "profile", &s.Profile, profiles, false)
	s.Response = o.str("response")
}

func (o obj) capability(c *Capability) {
	c.Name = o.name()
	c.Description = o.str("description")
	enum(o, "type", &c.Type, valueTypes, true)
	c.Unit = o.str("unit")
	c.TTL = o.dur("ttl")
	c.Location = o.str("location")
	c.Tags = o.strs("tags")
	if r, ok := o.sub("read", bindingKeys); ok {
		c.Read.Device = r.requiredStr("device", "the name of a device")
		c.Read.Channel = r.str("channel")
	}
	o.require("read", "{device: ..., channel: ...}")
	c.Do = opt(o, "do", actionKeys, obj.action)
	if h := opt(o, "health", healthKeys, obj.health); h != nil {
		c.Health = *h
	}
	if ob := opt(o, "observe", observeKeys, obj.observe); ob != nil {
		c.Observe = *ob
	}
	if h := opt(o, "history", historyKeys, obj.history); h != nil {
		c.History = *h
	}
}

func (o obj) health(h *Health) {
	if r, ok := o.sub("plausible", rangeKeys); ok {
		lo, okLo := r.numOK("min")
		hi, okHi := r.numOK("max")
		r.require("min", "the lowest plausible value")
		r.require("max", "the highest plausible value")
		switch {
		case okLo && okHi && lo > hi:
			r.add("max", ErrRange, ": %g is less than min %g", hi, lo)
		case okLo && okHi:
			h.Plausible = &Range{Min: lo, Max: hi}
		}
	}
	numIf(o, "max_rate", &h.MaxRate, positive, ": %g (want more than 0, in the capability's unit per second)")
	intIn(o, "stuck_samples", &h.StuckSamples, 2, 1000, ": %d (want 2..1000 samples)")
	h.StuckFor = o.dur("stuck_for")
	enum(o, "on_device_error", &h.OnDeviceError, deviceErrs, false)
	h.MaxStale = o.dur("max_stale")
}

func (o obj) action(a *Action) {
	if s, ok := o.strOK("tool"); ok {
		a.Tool = s
		if len(s) < 4 || s[:3] != "do_" || !nameRE().MatchString(s[3:]) {
			o.add("tool", ErrBadName, "%q (want do_ and lower_snake_case, such as \"do_set_heater\")", s)
		}
	}
	o.require("tool", `a tool name such as "do_set_heater"`)
	a.Description = o.str("description")
	a.SideEffects = o.strs("side_effects")
	a.Compensable = o.boolean("compensable")
	a.Settle = o.dur("settle")
	if a.Settle > MaxSettle {
		o.d.addAt(o.f["settle"], o.at("settle"), ErrRange, ": %s (want at most %s; the call waits this long before reading back)", a.Settle, MaxSettle)
	}
	if c, ok := o.sub("constraints", constraintsKeys); ok {
		a.Constraints = Constraints{Min: c.numPtr("min"), Max: c.numPtr("max"), Step: c.numPtr("step"), Enum: c.strs("enum")}
	}
	a.DependsOn = o.strs("depends_on")
	if o.has("safe_value") {
		a.SafeValue = o.scalar("safe_value")
	}
}

func (o obj) sim(s *Sim) {
	s.Seed, _ = o.integer("seed")
	numIf(o, "time_scale", &s.TimeScale, notNegative, ": %g (want 0 or more; 0 means 1)")
	s.Zones = list(o, "zones", zoneKeys, obj.zone)
}

func (o obj) zone(z *Zone) {
	z.Name = o.name()
	z.Temperature = o.num("temperature")
	numIf(o, "humidity", &z.Humidity, func(h float64) bool { return h >= 0 && h <= 100 }, ": %g (want 0..100 %%)")
	z.Outside = o.num("outside")
	z.LeakTimeConstant = o.dur("leak_time_constant")
	z.VentTimeConstant = o.dur("vent_time_constant")
	numIf(o, "heater_rate", &z.HeaterRate, positive, ": %g (want more than 0 °C per minute; leave it out for 0.5)")
	numIf(o, "noise", &z.Noise, notNegative, ": %g (want 0 or more °C)")
	z.Sensors, z.Heaters, z.Vents, z.Fans = o.strs("sensors"), o.strs("heaters"), o.strs("vents"), o.strs("fans")
	z.FanTimeConstant = o.dur("fan_time_constant")
}

func positive(v float64) bool    { return v > 0 }
func notNegative(v float64) bool { return v >= 0 }

// hexInt shows an integer in messages: %x as 0x-prefixed hex (a negative
// number in decimal), other verbs as the decimal number.
type hexInt int64

func (h hexInt) Format(f fmt.State, verb rune) {
	if verb == 'x' {
		fmt.Fprint(f, hex(int64(h)))
		return
	}
	fmt.Fprint(f, int64(h))
}

// pin decodes a host pin name. A bare number (17, "17") is refused: it
// does not say whether it is BCM GPIO 17 or the header's pin 17, so the
// message says both.
func (o obj) pin(k string) string {
	n := o.f[k]
	var num string
	switch v := n.(type) {
	case *ast.IntegerNode:
		num = v.GetToken().Value
	case *ast.StringNode:
		if _, err := strconv.Atoi(v.Value); err == nil {
			num = v.Value
		}
	}
	if num == "" {
		return o.str(k)
	}
	o.d.addAt(n, o.at(k), ErrUnknownValue, "%s (a bare number: is it BCM GPIO %s or the header's pin %s? Want the GPIO's name, "+
		"such as \"GPIO%s\" for BCM GPIO %s; a header pin is named by the GPIO wired to it, such as \"GPIO17\" for header pin 11)",
		num, num, num, num, num)
	return ""
}
