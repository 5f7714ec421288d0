package manifests

import (
	"slices"
	"strings"
)

// ModelDecl declares a sensor model in one place: the manifest side of
// everything the model is. Its name and the addresses it answers at, its
// channels with their units and plausible range (the health rules its
// readings are checked against and the simulator's defaults), the device
// keys only it takes with their decoding and checks, and the faults its
// simulated twin can inject. The tables the manifest checks consult (the
// model words, the I2C models, the channels, the address ranges, the keys
// and the faults) are built from [Declared].
//
// The other parts of a model live beside it, keyed by the same name: its
// opener in capabilities (model_<name>.go), its simulated twin in sim, its
// driver in drivers. Each package's tests check that every declared model
// has its part there.
type ModelDecl struct {
	Model Model
	// An reads the model with "an" ("an ina219"); false reads "a".
	An bool
	// Doc says in one line what the model is, for the docs and lint.
	Doc string
	// Bus is the bus kind a kernel-file model is on (dht22: gpio, read
	// through the kernel's files), or a serial_line's serial; "" is an
	// I2C chip; i2c is an I2C device that is no chip (registers: no fixed
	// addresses, its channels its own).
	Bus BusKind
	// Buses, for a model on more than one bus kind (modbus: tcp, rtu and
	// rtu over tcp), are them all; Bus is then the first.
	Buses []BusKind
	// Pin says the model is a host pin itself (gpio_in, gpio_out), on a
	// gpio bus but no kernel-file model: checked as a pin, its one
	// channel (named "") its level.
	Pin bool
	// Addresses are the I2C addresses the chip answers at; the first is
	// the usual one.
	Addresses []uint16
	// AddressHint says where the chip answers, for a wrong address.
	AddressHint string
	// Channels are the model's fixed channels.
	Channels []ChannelDecl
	// named, for a model whose channels a device names in its keys (an
	// ADC's inputs), returns the channels of dev; Channels are then none.
	named func(dev Device) []string
	// open, for a model whose named channels are not all of them (an mqtt
	// device with a preset: any key of its state), reports whether dev
	// takes channels not in named; the model's own check binds those.
	open func(dev Device) bool
	// Type is the type of the channels' values; "" is number.
	Type ValueType
	// Keys are the device keys only this model takes; KeysNote says why
	// another model does not take them ("only ina219 has a shunt").
	Keys     []string
	KeysNote string
	// decode decodes Keys (and the defaults of the model's devices) into
	// dev; own says whether dev is of this model. Nil: no keys.
	decode func(o obj, dev *Device, own bool)
	// check checks a device of this model beyond its address and keys.
	check func(c *checker, dev Device, path string)
	// Faults are the faults the simulated twin injects.
	Faults []FaultKind
	// Zone says whether a sim zone's air drives the model's temperature
	// and humidity channels.
	Zone bool
	// Sample is a device of the model as a manifest writes it (a list
	// item of devices, on a bus named i2c1, gpio, w1, pwm0, spi0, rs232
	// rs485 (modbus_rtu) or broker (mqtt)), for the docs and as
	// a starting point; a test loads it with a capability per channel.
	Sample string
}

// ChannelDecl is one channel of a declared model.
type ChannelDecl struct {
	Name string
	// Unit is the unit of its values, as a manifest writes it.
	Unit string
	// Min and Max bound a plausible reading: what the chip can measure.
	Min, Max float64
	// Health makes Min..Max the channel's health rule: a capability that
	// gives no health.plausible is degraded outside it (a frame that
	// passed its checksum but is no reading). False where the range
	// depends on the device's keys (an ina219's current on its shunt).
	Health bool
	// Sim is the simulated twin's reading when no zone or sim.values sets
	// it: a plausible indoor value.
	Sim float64
	// Integer says the channel's values are counts: a capability on it
	// may be integer as well as number (an mcp3008's raw code).
	Integer bool
	// Writable says a capability on the channel may have a do: side (a
	// pwm's duty); false is read-only.
	Writable bool
}

// Declared lists the declared models, in the order the manifest's lists
// name them. Adding a model is adding its file and its line here.
func Declared() []ModelDecl {
	return []ModelDecl{declRegisters(), declModbus(), declMQTT(), declSerialLine(), declGPIOIn(), declGPIOOut(), declSHT3x(), declBME280(), declBMP280(), declADS1115(), declADS1015(), declMCP23017(), declPCF8574(), declINA219(), declSHT4x(), declSCD4x(), declBH1750(), declDHT22(), declDS18B20(), declPWM(), declMCP3008(), declPulseCounter()}
}

// Decl returns the declaration of model m, if m is a declared model.
func Decl(m Model) (ModelDecl, bool) {
	for _, d := range Declared() {
		if d.Model == m {
			return d, true
		}
	}
	return ModelDecl{}, false
}

// Models lists every model this version knows, as the manifest spells them.
func Models() []Model {
	ms := make([]Model, len(models))
	for i, m := range models {
		ms[i] = Model(m)
	}
	return ms
}

// ChannelNames are the names of the model's channels. A pin's one
// channel, named "", is none: a capability leaves it out.
func (d ModelDecl) ChannelNames() []string {
	var ns []string
	for _, c := range d.Channels {
		if c.Name != "" {
			ns = append(ns, c.Name)
		}
	}
	return ns
}

// Channel returns the declared channel called name.
func (d ModelDecl) Channel(name string) (ChannelDecl, bool) {
	i := slices.IndexFunc(d.Channels, func(c ChannelDecl) bool { return c.Name == name })
	if i < 0 {
		return ChannelDecl{}, false
	}
	return d.Channels[i], true
}

// DefaultPlausible is the health rule of channel of model m when the
// capability gives none: the channel's declared range, if the declaration
// makes it one; nil otherwise.
func DefaultPlausible(m Model, channel string) *Range {
	d, ok := Decl(m)
	if !ok {
		return nil
	}
	c, ok := d.Channel(channel)
	if !ok || !c.Health {
		return nil
	}
	return &Range{Min: c.Min, Max: c.Max}
}

// writable reports whether any of d's channels may be written.
func (d ModelDecl) writable() bool {
	return slices.ContainsFunc(d.Channels, func(c ChannelDecl) bool { return c.Writable })
}

// FaultApplies reports whether the twin injects k.
func (d ModelDecl) FaultApplies(k FaultKind) bool { return slices.Contains(d.Faults, k) }

// isDeclared reports whether m is a declared model.
func isDeclared(m Model) bool {
	_, ok := Decl(m)
	return ok
}

// isDeclaredChip reports whether m is a declared I2C chip.
func isDeclaredChip(m Model) bool {
	d, ok := Decl(m)
	return ok && d.Bus == ""
}

// declaredOn reports whether m is a declared kernel-file model on a bus of
// kind k.
func declaredOn(m Model, k BusKind) bool {
	d, ok := Decl(m)
	return ok && d.Bus != "" && d.Bus == k && !d.Pin
}

// declaredKeys are the declared models' own device keys.
func declaredKeys() []string {
	var ks []string
	for _, d := range Declared() {
		ks = append(ks, d.Keys...)
	}
	return ks
}

// declaredWords are the names of the declared models.
func declaredWords() []string {
	var ws []string
	for _, d := range Declared() {
		ws = append(ws, string(d.Model))
	}
	return ws
}

// addressProblem says why addr is not an address of d, or "".
func (d ModelDecl) addressProblem(addr uint16) string {
	if slices.Contains(d.Addresses, addr) {
		return ""
	}
	return d.AddressHint
}

// articled is the model with its article: "an ina219", "a bh1750".
func (d ModelDecl) articled() string {
	if d.An {
		return "an " + string(d.Model)
	}
	return "a " + string(d.Model)
}

// addressRange lists addresses lo..hi.
func addressRange(lo, hi uint16) []uint16 {
	var as []uint16
	for a := lo; a <= hi; a++ {
		as = append(as, a)
	}
	return as
}

// decodeDeclared decodes every declared model's keys on dev.
func (o obj) decodeDeclared(dev *Device) {
	for _, d := range Declared() {
		if d.decode != nil {
			d.decode(o, dev, dev.Model == d.Model)
		}
	}
}

// checkDeclared refuses the declared models' own keys on a device of
// another model, and runs the checks of dev's model if it is declared.
func (c *checker) checkDeclared(dev Device, path string) {
	for _, d := range Declared() {
		if d.Model != dev.Model && len(d.Keys) > 0 {
			c.notAllowed(path, d.Keys, "for model %s ("+strings.ReplaceAll(d.KeysNote, "%", "%%")+")", dev.Model)
		}
	}
	if d, ok := Decl(dev.Model); ok && d.check != nil {
		d.check(c, dev, path)
	}
}

// allFaults is every fault kind: a chip with a checksummed protocol.
func allFaults() []FaultKind { return FaultKinds() }

// chipFaults are the faults of a chip without a checksum.
func chipFaults() []FaultKind {
	return slices.DeleteFunc(FaultKinds(), func(k FaultKind) bool { return k == FaultCRC })
}

// The simulator's air when no zone drives a sensor: sim's
// DefaultTemperature and DefaultHumidity.
const (
	DefaultSimTemperature = 20.0 // °C
	DefaultSimHumidity    = 50.0 // %RH
)

// declaredZoneSensors are the declared models a zone's air drives.
func declaredZoneSensors() []Model {
	var ms []Model
	for _, d := range Declared() {
		if d.Zone {
			ms = append(ms, d.Model)
		}
	}
	return ms
}

// isDeclaredI2C reports whether m is a declared I2C device that is no chip.
func isDeclaredI2C(m Model) bool {
	d, ok := Decl(m)
	return ok && d.Bus == BusI2C
}

// on reports whether d is on a bus of kind k.
func (d ModelDecl) on(k BusKind) bool { return d.Bus == k || slices.Contains(d.Buses, k) }
