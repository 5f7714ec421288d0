package manifests

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
)

// pmBinding is what one PhysMCP binding type takes: the keys of ours it
// admits beside type and address, and its translation.
type pmBinding struct {
	extensions []string
	translate  func(t *pmTranslator, a pmAddr, pc *pmCap) yaml.MapSlice
}

// pmBindings are the binding types this gateway has a driver for (the
// others are in pmUnsupportedBinding).
var pmBindings = map[string]pmBinding{
	"i2c":    {[]string{"bus_device", "register_type", "byte_order", "scale", "offset"}, (*pmTranslator).i2c},
	"gpio":   {[]string{"active_low", "pull"}, (*pmTranslator).gpio},
	"modbus": {[]string{"bus_address", "register_type", "byte_order", "scale", "offset"}, (*pmTranslator).modbus},
	"pwm":    {[]string{"bus_device"}, (*pmTranslator).pwm},
	"adc":    {[]string{"bus_device", "chip", "full_scale"}, (*pmTranslator).ads1x15},
	"spi":    {[]string{"bus_device", "vref"}, (*pmTranslator).mcp3008},
	"mqtt":   {[]string{"bus_address", "command_topic", "availability"}, (*pmTranslator).mqtt},
}

// binding translates type and address into a bus, a device (or a register
// of one shared with other capabilities) and our read binding.
func (t *pmTranslator) binding(b obj, pc *pmCap) yaml.MapSlice {
	var bt string
	if !enum(b, "type", &bt, pmBindingTypes, true) {
		return nil
	}
	if why, ok := pmUnsupportedBinding[bt]; ok {
		b.add("type", ErrUnsupported, ": %s (%s)", bt, why)
		return nil
	}
	t.bindingPath = b.at("address")
	addr := b.requiredStr("address", "the binding's address, such as \"0x48:reg=0x00\"")
	if addr == "" {
		return nil
	}
	parts, ok := splitAddress(b, addr)
	if !ok {
		return nil
	}
	bind := pmBindings[bt]
	for _, k := range pmBindingKeys[2:] {
		if b.has(k) && !slices.Contains(bind.extensions, k) {
			b.add(k, ErrNotAllowed, "on a %s binding (want %s)", bt, oneOf(bind.extensions))
		}
	}
	return bind.translate(t, pmAddr{b: b, bt: bt, addr: addr, parts: parts}, pc)
}

// pmAddr is a binding b of type bt, with its address split into parts.
type pmAddr struct {
	b     obj
	bt    string
	addr  string
	parts map[string]string
}

// splitAddress splits "0x48:reg=0x00" into {"": "0x48", "reg": "0x00"}.
func splitAddress(b obj, addr string) (map[string]string, bool) {
	out := map[string]string{}
	for i, part := range strings.Split(addr, ":") {
		k, v, eq := strings.Cut(part, "=")
		if !eq {
			if i != 0 {
				b.add("address", ErrType, ": %q: part %q is not key=value", addr, part)
				return nil, false
			}
			k, v = "", part
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if _, dup := out[k]; dup {
			b.add("address", ErrDuplicate, "%q in %q", k, addr)
			return nil, false
		}
		out[k] = v
	}
	return out, true
}

// allow reports the first part of the address that is not one of allowed
// ("" is the bare value before the first colon) and says whether all are.
func (a pmAddr) allow(allowed ...string) bool {
	for k := range a.parts {
		if !slices.Contains(allowed, k) {
			what, want := k, slices.Clone(allowed)
			if k == "" {
				what = "a bare value"
			}
			if want[0] == "" {
				want[0] = "the address"
			}
			a.b.add("address", ErrUnsupported, ": %s in %q (want %s)", what, a.addr, strings.Join(want, ", "))
			return false
		}
	}
	return true
}

// need reports the first of keys missing from the address, with an
// example of a whole address, and says whether all are there.
func (a pmAddr) need(example string, keys ...string) bool {
	for _, k := range keys {
		if _, ok := a.parts[k]; !ok {
			a.b.add("address", ErrMissing, "%s= in %q (want such as %s)", k, a.addr, example)
			return false
		}
	}
	return true
}

// uint is the part k, an integer 0..max.
func (a pmAddr) uint(k string, max uint64) (uint64, bool) {
	s := a.parts[k]
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil || v > max {
		what := k
		if k == "" {
			what = "the address"
		}
		a.b.add("address", ErrRange, ": %s %q (want an integer 0..%d, decimal or 0x hex)", what, s, max)
		return 0, false
	}
	return v, true
}

// optUint is the part k, an integer 0..max, or def when the address
// leaves it out.
func (a pmAddr) optUint(k string, def, max uint64) (uint64, bool) {
	if _, ok := a.parts[k]; !ok {
		return def, true
	}
	return a.uint(k, max)
}

// noTimeout refuses the capability's timeout_ms on a binding whose
// transactions have no timeout of their own (why, with args, says so).
func (t *pmTranslator) noTimeout(pc *pmCap, why string, args ...any) {
	if t.capTimeout > 0 {
		pc.c.add("timeout_ms", ErrUnsupported, why, args...)
	}
}

// bus adds the bus keyed key, named name, with keys after its name, once;
// it returns the name of the bus that key made first.
func (t *pmTranslator) bus(key, name string, keys ...yaml.MapItem) string {
	if i, ok := t.busIndex[key]; ok {
		return t.buses[i].name
	}
	t.made["buses"] = append(t.made["buses"], t.bindingPath)
	t.busIndex[key] = len(t.buses)
	t.buses = append(t.buses, pmBus{name, append(yaml.MapSlice{{Key: "name", Value: name}}, keys...)})
	return name
}

// hostBus is the host's bus of kind on busDev, named kind (on the default
// device, when busDev is empty) or kind_<busDev>.
func (t *pmTranslator) hostBus(kind, busDev string) string {
	if busDev == "" {
		return t.bus(kind+":", kind, yaml.MapItem{Key: "kind", Value: kind})
	}
	return t.bus(kind+":"+busDev, kind+"_"+snake(busDev), yaml.MapItem{Key: "kind", Value: kind}, yaml.MapItem{Key: "device", Value: busDev})
}

// netBus is the bus at addr, named kind or, when the binding gives
// bus_address, kind_<addr>.
func (t *pmTranslator) netBus(b obj, kind, addr string, keys ...yaml.MapItem) string {
	name := kind
	if b.has("bus_address") {
		name = kind + "_" + snake(addr)
	}
	return t.bus(kind+":"+addr, name, keys...)
}

func (t *pmTranslator) device(name string, fields yaml.MapSlice) *pmDevice {
	if i, ok := t.devIndex[name]; ok {
		return t.devices[i]
	}
	dv := &pmDevice{name: name, fields: append(yaml.MapSlice{{Key: "name", Value: name}}, fields...)}
	t.made["devices"] = append(t.made["devices"], t.bindingPath)
	t.devIndex[name] = len(t.devices)
	t.devices = append(t.devices, dv)
	return dv
}

// channelRead is a read binding: the device and its channel.
func channelRead(dev, channel string) yaml.MapSlice {
	return yaml.MapSlice{{Key: "device", Value: dev}, {Key: "channel", Value: channel}}
}

// register ends a register r of ours with what the binding b says of its
// encoding (byte_order, scale, offset); a do's register is writable.
func register(b obj, kind string, r yaml.MapSlice) yaml.MapSlice {
	if s := b.str("byte_order"); s != "" {
		r = append(r, yaml.MapItem{Key: "byte_order", Value: s})
	}
	for _, k := range []string{"scale", "offset"} {
		if v, ok := b.numOK(k); ok {
			r = append(r, yaml.MapItem{Key: k, Value: v})
		}
	}
	if kind == "do" {
		r = append(r, yaml.MapItem{Key: "writable", Value: true})
	}
	return r
}

var nonWord = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-z0-9]+`) })

func snake(s string) string {
	return strings.Trim(nonWord().ReplaceAllString(strings.ToLower(s), "_"), "_")
}

func strOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// i2c: "0x48:reg=0x00" is register 0x00 of a register-map device at 0x48.
// PhysMCP does not say the bus or the register's encoding: bus_device
// (default the first bus), register_type (default int16), byte_order
// (default big), scale (default 1) and offset (default 0) say them.
func (t *pmTranslator) i2c(a pmAddr, pc *pmCap) yaml.MapSlice {
	b := a.b
	if !a.allow("", "reg") || !a.need(`"0x48:reg=0x00"`, "reg") {
		return nil
	}
	addr, ok1 := a.uint("", 0x7f)
	reg, ok2 := a.uint("reg", 0xff)
	if !ok1 || !ok2 {
		return nil
	}
	if pc.typ == "" {
		return nil // the data_type is reported
	}
	if pc.typ != TypeNumber && pc.typ != TypeInteger {
		b.add("type", ErrUnsupported, ": an i2c register carries a float or an int, not %s", pc.typ)
		return nil
	}
	busName := t.hostBus("i2c", b.str("bus_device"))
	devName := fmt.Sprintf("%s_0x%02x", busName, addr)
	dv := t.device(devName, yaml.MapSlice{{Key: "bus", Value: busName}, {Key: "model", Value: "registers"}, {Key: "address", Value: hexAddr(addr)}})
	dv.regs = append(dv.regs, register(b, pc.kind, yaml.MapSlice{{Key: "name", Value: pc.name}, {Key: "address", Value: hexAddr(reg)}, {Key: "type", Value: strOr(b.str("register_type"), "int16")}}))
	t.noTimeout(pc, "on an i2c binding (an I2C transaction's timeout is its bus's: set timeout on the bus in our format)")
	return channelRead(devName, pc.name)
}

// gpio: "pin=14:mode=digital" is BCM pin GPIO14, an input for a read and an
// output for a do. Only digital mode exists here.
func (t *pmTranslator) gpio(a pmAddr, pc *pmCap) yaml.MapSlice {
	b := a.b
	if !a.allow("pin", "mode") {
		return nil
	}
	if m, ok := a.parts["mode"]; ok && m != "digital" {
		b.add("address", ErrUnsupported, ": mode=%s in %q (a GPIO here is digital; an analog value needs an ADC device model)", m, a.addr)
		return nil
	}
	if !a.need(`"pin=14:mode=digital"`, "pin") {
		return nil
	}
	pin, ok := a.uint("pin", 63)
	if !ok || pc.typ == "" {
		return nil
	}
	if pc.typ != TypeBoolean {
		pc.c.add("data_type", ErrNotAllowed, "on a gpio binding: %s (want bool)", pc.typ)
		return nil
	}
	if pc.kind == "read" && b.has("active_low") {
		b.add("active_low", ErrNotAllowed, "on an input (only outputs are active low here)")
	}
	if pc.kind == "do" && b.has("pull") {
		b.add("pull", ErrNotAllowed, "on an output (only inputs have a pull resistor)")
	}
	busName := t.bus("gpio", "gpio", yaml.MapItem{Key: "kind", Value: "gpio"})
	model := map[string]string{"read": "gpio_in", "do": "gpio_out"}[pc.kind]
	devName := fmt.Sprintf("gpio%d_%s", pin, map[string]string{"read": "in", "do": "out"}[pc.kind])
	f := yaml.MapSlice{{Key: "bus", Value: busName}, {Key: "model", Value: model}, {Key: "pin", Value: fmt.Sprintf("GPIO%d", pin)}}
	if b.has("active_low") {
		f = append(f, yaml.MapItem{Key: "active_low", Value: b.boolean("active_low")})
	}
	if s := b.str("pull"); s != "" {
		f = append(f, yaml.MapItem{Key: "pull", Value: s})
	}
	t.device(devName, f)
	t.noTimeout(pc, "on a gpio binding (setting a pin does not wait on a device)")
	return yaml.MapSlice{{Key: "device", Value: devName}}
}

// pmADC is what the address of an ADC binding type holds: ch= up to
// maxCh, and the part that picks the chip (its I2C address, its chip
// select), def when left out, up to max.
type pmADC struct {
	maxCh    uint64
	example  string
	chip     string
	def, max uint64
}

var pmADCs = map[string]pmADC{
	"adc": {3, `"0x48:ch=0"`, "", 0x48, 0x7f},
	"spi": {7, `"ch=0"`, "cs", 0, 1},
}

// analogIn decodes an ADC binding, a read in volts: its channel, the part
// of its address that picks the chip, and its bus_device.
func (t *pmTranslator) analogIn(a pmAddr, pc *pmCap) (ch, chip uint64, busDev string, ok bool) {
	adc := pmADCs[a.bt]
	if !a.allow(adc.chip, "ch") || !a.need(adc.example, "ch") {
		return 0, 0, "", false
	}
	if ch, ok = a.uint("ch", adc.maxCh); !ok {
		return 0, 0, "", false
	}
	if pc.kind == "do" {
		pc.c.add("kind", ErrNotAllowed, "on an %s binding: do (an ADC input is read-only)", a.bt)
		return 0, 0, "", false
	}
	if pc.typ == "" {
		return 0, 0, "", false
	}
	if pc.typ != TypeNumber || pc.unit != "V" {
		pc.c.add("unit", ErrNotAllowed, "on an %s binding: data_type %s, unit %q (want float in volt: scaled channels, mA or percent, are declared in our format)", a.bt, pc.typ, pc.unit)
		return 0, 0, "", false
	}
	t.noTimeout(pc, "on an %s binding (a conversion's timeout is its bus's)", a.bt)
	busDev = a.b.str("bus_device")
	chip, ok = a.optUint(adc.chip, adc.def, adc.max)
	return ch, chip, busDev, ok
}

// ads1x15 (adc): "0x48:ch=0" is input a0 (against GND) of an ADS1115 at
// 0x48 (0x48..0x4b; without the address, 0x48), read in volts. PhysMCP
// does not say the chip, the bus or the gain: chip (ads1115, the default,
// or ads1015), bus_device (default the first I2C bus) and full_scale
// (default 4.096 V) say them. It is read-only.
func (t *pmTranslator) ads1x15(a pmAddr, pc *pmCap) yaml.MapSlice {
	b := a.b
	ch, addr, busDev, ok := t.analogIn(a, pc)
	if !ok {
		return nil
	}
	if addr < 0x48 || addr > 0x4b {
		b.add("address", ErrRange, ": 0x%02x in %q (an ADS1x15 answers at 0x48..0x4b)", addr, a.addr)
		return nil
	}
	chip := strOr(b.str("chip"), "ads1115")
	if chip != "ads1115" && chip != "ads1015" {
		b.add("chip", ErrUnknownValue, ": %q (want ads1115 or ads1015)", chip)
		return nil
	}
	busName := t.hostBus("i2c", busDev)
	devName := fmt.Sprintf("%s_0x%02x", busName, addr)
	dv := t.device(devName, yaml.MapSlice{{Key: "bus", Value: busName}, {Key: "model", Value: chip}, {Key: "address", Value: hexAddr(addr)}})
	in := yaml.MapSlice{{Key: "name", Value: pc.name}, {Key: "input", Value: fmt.Sprintf("a%d", ch)}}
	if v, ok := b.numOK("full_scale"); ok {
		in = append(in, yaml.MapItem{Key: "full_scale", Value: v})
	}
	dv.inputs = append(dv.inputs, in)
	return channelRead(devName, pc.name)
}

// mcp3008 (spi): "ch=0" is input ch0 (against GND) of an MCP3008 on
// /dev/spidev0.0, read in volts; "cs=1:ch=0" is the chip on chip-select 1
// (/dev/spidev0.1). bus_device (a spidev path, overriding cs=) and vref
// (default 3.3 V) say what PhysMCP does not. It is read-only.
func (t *pmTranslator) mcp3008(a pmAddr, pc *pmCap) yaml.MapSlice {
	ch, cs, busDev, ok := t.analogIn(a, pc)
	if !ok {
		return nil
	}
	if busDev == "" {
		busDev = fmt.Sprintf("/dev/spidev0.%d", cs)
	}
	busName := t.bus("spi:"+busDev, "spi_"+snake(strings.TrimPrefix(busDev, "/dev/")), yaml.MapItem{Key: "kind", Value: "spi"}, yaml.MapItem{Key: "device", Value: busDev})
	devName := busName + "_mcp3008"
	f := yaml.MapSlice{{Key: "bus", Value: busName}, {Key: "model", Value: "mcp3008"}}
	if v, ok := a.b.numOK("vref"); ok {
		f = append(f, yaml.MapItem{Key: "vref", Value: v})
	}
	t.device(devName, f)
	return channelRead(devName, fmt.Sprintf("ch%d", ch))
}

// mqtt: "garden/valve1" is the state topic of a Lite device adopted over
// MQTT (the whole payload is the value); "garden/valve1:path=state.on"
// picks a dot-separated JSON path from it. A do publishes its value on
// the command topic, <topic>/set unless command_topic says another, and
// reads the state topic back. PhysMCP does not say the broker: bus_address
// (default mqtt://127.0.0.1:1883) does, and availability (no default)
// names the topic where the device's Last Will says offline. Capabilities
// on one state topic share one mqtt device (no preset).
func (t *pmTranslator) mqtt(a pmAddr, pc *pmCap) yaml.MapSlice {
	b := a.b
	if !a.allow("", "path") {
		return nil
	}
	topic := a.parts[""]
	if topic == "" || strings.ContainsAny(topic, "+#") {
		b.add("address", ErrType, ": %q (want a state topic without wildcards, such as \"garden/valve1\" or \"garden/valve1:path=state\")", a.addr)
		return nil
	}
	if pc.typ == "" {
		return nil
	}
	if pc.typ != TypeNumber && pc.typ != TypeInteger && pc.typ != TypeBoolean {
		pc.c.add("data_type", ErrUnsupported, "on an mqtt binding: %s (want float, int or bool)", pc.typ)
		return nil
	}
	if pc.kind == "read" && b.has("command_topic") {
		b.add("command_topic", ErrNotAllowed, "on a read capability (only a do publishes commands)")
	}
	t.noTimeout(pc, "on an mqtt binding (a do_* waits for its state topic within settle_ms)")
	broker := strOr(b.str("bus_address"), "mqtt://127.0.0.1:1883")
	busName := t.netBus(b, "mqtt", broker, yaml.MapItem{Key: "kind", Value: "mqtt"}, yaml.MapItem{Key: "mqtt", Value: yaml.MapSlice{{Key: "broker", Value: broker}}})
	devName := busName + "_" + snake(topic)
	dv := t.device(devName, yaml.MapSlice{{Key: "bus", Value: busName}, {Key: "model", Value: "mqtt"}})
	if av := b.str("availability"); av != "" {
		dv.mqttAvail = av
	}
	ch := yaml.MapSlice{{Key: "name", Value: pc.name}, {Key: "state", Value: topic}}
	if p := a.parts["path"]; p != "" {
		ch = append(ch, yaml.MapItem{Key: "path", Value: p})
	}
	if pc.kind == "do" {
		ch = append(ch, yaml.MapItem{Key: "command", Value: strOr(b.str("command_topic"), topic+"/set")})
	}
	dv.inputs = append(dv.inputs, ch)
	return channelRead(devName, pc.name)
}

// pmPWMPins maps a Raspberry Pi's PWM-capable BCM pins to the channel of
// pwmchip0 they carry (dtoverlay=pwm-2chan: PWM0 on GPIO12 or GPIO18, PWM1
// on GPIO13 or GPIO19).
var pmPWMPins = map[uint64]int{12: 0, 18: 0, 13: 1, 19: 1}

// DefaultPhysMCPPWMFrequency is the frequency of a PhysMCP pwm binding
// whose address leaves out freq=.
const DefaultPhysMCPPWMFrequency = 1000

// pwm: "pin=18:freq=25000" is the hardware PWM channel on BCM pin 18 (a
// Pi's pin 12 or 18 is pwmchip0 channel 0, 13 or 19 channel 1; any other
// pin is refused: it has no hardware PWM), at freq Hz (default 1000). The
// capability is the duty cycle in percent, read back from the chip; a do
// sets it. PhysMCP does not say the chip: bus_device (default
// /sys/class/pwm/pwmchip0) does.
func (t *pmTranslator) pwm(a pmAddr, pc *pmCap) yaml.MapSlice {
	b := a.b
	if !a.allow("pin", "freq") || !a.need(`"pin=18:freq=25000"`, "pin") {
		return nil
	}
	pin, ok := a.uint("pin", 63)
	if !ok {
		return nil
	}
	ch, ok := pmPWMPins[pin]
	if !ok {
		b.add("address", ErrUnsupported, ": pin=%d in %q (a Raspberry Pi has hardware PWM on GPIO12 and GPIO18, pwmchip0 channel 0, and GPIO13 and GPIO19, channel 1)", pin, a.addr)
		return nil
	}
	freq, ok := a.optUint("freq", DefaultPhysMCPPWMFrequency, 100_000_000)
	if !ok {
		return nil
	}
	if freq == 0 {
		b.add("address", ErrRange, ": freq=0 in %q (want 1 Hz or more)", a.addr)
		return nil
	}
	if pc.typ == "" {
		return nil
	}
	if pc.typ != TypeNumber {
		pc.c.add("data_type", ErrNotAllowed, "on a pwm binding: %s (want float, the duty cycle)", pc.typ)
		return nil
	}
	if pc.unit != "%" {
		pc.c.add("unit", ErrNotAllowed, "on a pwm binding: %q (want percent, the duty cycle)", pc.unit)
		return nil
	}
	busName := t.hostBus("pwm", b.str("bus_device"))
	devName := fmt.Sprintf("%s_ch%d", busName, ch)
	t.device(devName, yaml.MapSlice{{Key: "bus", Value: busName}, {Key: "model", Value: "pwm"}, {Key: "channel", Value: ch}, {Key: "frequency", Value: freq}})
	t.noTimeout(pc, "on a pwm binding (writing the kernel's pwm files does not wait on a device)")
	return channelRead(devName, "duty")
}

// modbus: "slave=1:reg=40001:type=holding". The register number is the
// Modicon one (40001 is holding 0, 30001 input 0, 10001 discrete 0, and
// without type= 1 is coil 0) or, with type= and a number below 10000 (or
// one whose Modicon table is another), a 0-based address. PhysMCP does not say where the
// slave is nor how a value is encoded: bus_address (default
// 127.0.0.1:502, Modbus TCP), register_type (default float32 for float,
// two registers; int16 for int; bool on coils and discrete inputs), byte_order (default ABCD),
// scale (default 1) and offset (default 0) say them. An enum is served by
// its names; the register holds the index of the name in enum_values (0 is
// the first).
func (t *pmTranslator) modbus(a pmAddr, pc *pmCap) yaml.MapSlice {
	b := a.b
	slave, table, reg, ok := modbusAddress(a, pc.kind)
	if !ok {
		return nil
	}
	rtype := b.str("register_type")
	switch {
	case pc.typ == TypeBoolean && rtype == "":
		rtype = "bool"
	case pc.typ == TypeNumber && rtype == "":
		rtype = "float32" // a float, such as the spec's setpoint: 22.5 °C is written as is
	case rtype == "":
		rtype = "int16"
	}
	if pc.typ == TypeEnum && !pc.enumOnRegister() {
		return nil
	}
	busAddr := strOr(b.str("bus_address"), "127.0.0.1:502")
	busName := t.netBus(b, "modbus", busAddr, yaml.MapItem{Key: "kind", Value: "modbus_tcp"}, yaml.MapItem{Key: "address", Value: busAddr})
	devName := fmt.Sprintf("%s_slave_%d", busName, slave)
	dv := t.device(devName, yaml.MapSlice{{Key: "bus", Value: busName}, {Key: "model", Value: "modbus"}, {Key: "unit_id", Value: slave}})
	dv.regs = append(dv.regs, register(b, pc.kind, yaml.MapSlice{{Key: "name", Value: pc.name}, {Key: "table", Value: table}, {Key: "address", Value: reg}, {Key: "type", Value: rtype}}))
	t.timeout(dv)
	return channelRead(devName, pc.name)
}

// modbusAddress decodes a modbus binding's address into the slave, the
// table and the 0-based register; a do's table must be writable.
func modbusAddress(a pmAddr, kind string) (slave uint64, table string, reg uint64, ok bool) {
	if !a.allow("slave", "reg", "type") || !a.need(`"slave=1:reg=40001:type=holding"`, "slave", "reg") {
		return 0, "", 0, false
	}
	slave, ok1 := a.uint("slave", 247)
	reg, ok2 := a.uint("reg", 465536)
	if !ok1 || !ok2 {
		return 0, "", 0, false
	}
	table = a.parts["type"]
	modicon := map[uint64]string{4: "holding", 3: "input", 1: "discrete", 0: "coil"}
	if reg >= 1 && reg <= 99999 && reg%10000 != 0 {
		if tb, ok := modicon[reg/10000]; ok && (table == "" || table == tb) && (reg > 9999 || table == "") {
			table, reg = tb, reg%10000-1
		}
	}
	switch {
	case !slices.Contains(tables, table):
		a.b.add("address", ErrUnknownValue, ": type=%s in %q (want %s)", table, a.addr, oneOf(tables))
	case reg > 65535:
		a.b.add("address", ErrRange, ": reg %d in %q (want 0..65535, or a Modicon number such as 40001)", reg, a.addr)
	case kind == "do" && (table == "input" || table == "discrete"):
		a.b.add("address", ErrNotAllowed, ": type=%s for a do (a %s register is read-only)", table, table)
	default:
		return slave, table, reg, true
	}
	return 0, "", 0, false
}

// enumOnRegister keeps an enum capability on a register an enum: served
// and written by its names, the register holding the index of the name in
// enum_values (0 is the first), which the description lists.
func (pc *pmCap) enumOnRegister() bool {
	if len(pc.enumVals) == 0 {
		pc.c.add("enum_values", ErrMissing, "enum_values (the values of the enum, in register order)")
		return false
	}
	var vs []string
	for i, v := range pc.enumVals {
		vs = append(vs, fmt.Sprintf("%d=%s", i, v))
	}
	pc.desc += " (register value: " + strings.Join(vs, ", ") + ")"
	return true
}

// timeout maps timeout_ms to the device's timeout (the longest that any of
// its capabilities asks for).
func (t *pmTranslator) timeout(dv *pmDevice) {
	if t.capTimeout > dv.timeout {
		dv.timeout = t.capTimeout
	}
}

// hexAddr is an I2C address or register as people write it (0x48), in the
// YAML convert writes.
type hexAddr uint64

// MarshalYAML writes the address in hex.
func (h hexAddr) MarshalYAML() ([]byte, error) { return fmt.Appendf(nil, "0x%02x", uint64(h)), nil }
