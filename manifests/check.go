package manifests

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/promcp/promcp-device/drivers/i2c/i2cconf"
)

// checker finds the problems that span several keys: uniqueness,
// references, and whether a model, channel, type and action fit together.
// It runs after decoding and skips values that decoding already reported
// (empty names, unknown enum values), so that one mistake is one error.
type checker struct {
	m       *Manifest
	d       *decoder
	buses   map[string]int // first index by name
	devices map[string]int
}

func check(m *Manifest, d *decoder) {
	c := &checker{m: m, d: d, buses: map[string]int{}, devices: map[string]int{}}
	c.checkBuses()
	c.checkDevices()
	c.checkCapabilities()
	c.checkGroups()
	c.checkSim()
	c.checkJobs()
}

// unique reports name at path when seen already holds it, and records it
// otherwise. It reports whether name is new.
func (c *checker) unique(seen map[string]string, what, name, path string) bool {
	if name == "" {
		return false
	}
	return c.once(seen, name, path, "%s %q", what, name)
}

// once records key at path in seen, or, when seen holds it already,
// reports the duplicate as format says, with where the first one is. It
// reports whether key is new.
func (c *checker) once(seen map[string]string, key, path, format string, args ...any) bool {
	if first, dup := seen[key]; dup {
		c.d.add(path, ErrDuplicate, format+" (first at %s)", append(args, c.first(first, path))...)
		return false
	}
	seen[key] = path
	return true
}

// notAllowed reports each of keys that the mapping at path gives.
func (c *checker) notAllowed(path string, keys []string, format string, args ...any) {
	for _, k := range keys {
		if c.d.has(join(path, k)) {
			c.d.add(join(path, k), ErrNotAllowed, format, args...)
		}
	}
}

// first says where the first of two duplicates is: "line 12", or
// "line 12 column 5" when the second is on the same line.
func (c *checker) first(first, second string) string {
	p, q := c.d.at(first), c.d.at(second)
	if p.Line == q.Line {
		return fmt.Sprintf("line %d column %d", p.Line, p.Column)
	}
	return fmt.Sprintf("line %d", p.Line)
}

// candidates lists names for the parenthesis after an undefined name:
// "want a, b or c".
func candidates(what string, names []string) string {
	plural := what + "s"
	if strings.HasSuffix(what, "s") {
		plural = what + "es"
	}
	switch {
	case len(names) == 0:
		return "the manifest declares no " + plural
	case len(names) > 10:
		return fmt.Sprintf("want one of the %d %s declared", len(names), plural)
	}
	return "want " + oneOf(names)
}

func (c *checker) checkBuses() {
	seen := map[string]string{}
	for i, b := range c.m.Buses {
		path := index("buses", i)
		if c.unique(seen, "bus name", b.Name, join(path, "name")) {
			c.buses[b.Name] = i
		}
		if b.Kind == BusGPIO && c.d.has(join(path, "device")) {
			c.d.add(join(path, "device"), ErrNotAllowed, "for a gpio bus (pins are named by each device's pin)")
		}
		c.busLine(b, path)
		c.busMQTT(b, path)
		c.busKindExt(b, path)
	}
}

func isI2C(m Model) bool  { return isChip(m) || isDeclaredI2C(m) }
func isGPIO(m Model) bool { return m == ModelGPIOIn || m == ModelGPIOOut }

func (c *checker) checkDevices() {
	seen := map[string]string{}
	addrs := map[string]string{} // "bus/0x44" → path
	pins := map[string]string{}
	units := map[string]string{} // "bus/17" → path
	ext := map[string]string{}   // "bus/rom" → path
	busNames := namesOf(c.m.Buses, busName)
	for i, dev := range c.m.Devices {
		path := index("devices", i)
		field := func(k string) string { return join(path, k) }
		if c.unique(seen, "device name", dev.Name, field("name")) {
			c.devices[dev.Name] = i
		}
		var bus *Bus
		if dev.Bus != "" && !c.d.bad["buses"] {
			if j, ok := c.buses[dev.Bus]; ok {
				bus = &c.m.Buses[j]
			} else {
				c.d.add(field("bus"), ErrBadReference, "bus %q (%s)", dev.Bus, candidates("bus", busNames))
			}
		}
		c.noExtKeys(dev, path)
		if dev.Model == ModelMQTT {
			c.chipDevice(dev, path) // refuses inputs, pins and a shunt on it
			c.mqttDevice(dev, bus, path)
			continue
		}
		c.notAllowed(path, []string{"mqtt"}, "for model %s (only mqtt devices have topics)", dev.Model)
		if isBusModel(dev.Model) {
			c.noLineKeys(dev, path)
			c.chipDevice(dev, path)
			c.busDevice(dev, bus, path, ext, pins)
			continue
		}
		if isLine(dev.Model) {
			c.lineDevice(dev, bus, path, units)
			continue
		}
		c.noLineKeys(dev, path)
		c.chipDevice(dev, path)
		if !isI2C(dev.Model) && !isGPIO(dev.Model) {
			continue // missing or unknown: reported
		}
		if bus != nil {
			switch {
			case isI2C(dev.Model) && bus.Kind == BusGPIO:
				c.d.add(field("model"), ErrNotAllowed, "on gpio bus %q: %s (want %s, or an i2c bus)", bus.Name, dev.Model, modelsFor(BusGPIO))
			case isGPIO(dev.Model) && bus.Kind == BusI2C:
				c.d.add(field("model"), ErrNotAllowed, "on i2c bus %q: %s (want %s, or a gpio bus)", bus.Name, dev.Model, modelsFor(BusI2C))
			case bus.Kind.IsModbus() || bus.Kind == BusSerial || bus.Kind == BusMQTT || isKernelBus(bus.Kind):
				c.d.add(field("model"), ErrNotAllowed, "on %s bus %q: %s (want %s)", bus.Kind, bus.Name, dev.Model, modelsFor(bus.Kind))
			}
		}
		if isI2C(dev.Model) {
			c.i2cDevice(dev, path, addrs)
		} else {
			c.gpioDevice(dev, path, pins)
		}
		if dev.Model != ModelGPIOIn && c.d.has(field("pull")) {
			c.d.add(field("pull"), ErrNotAllowed, "for model %s (only gpio_in has a pull resistor)", dev.Model)
		}
		c.registers(dev, path)
		if dev.Sim != nil {
			c.deviceSim(dev, path)
		}
	}
}

func (c *checker) i2cDevice(dev Device, path string, addrs map[string]string) {
	field := func(k string) string { return join(path, k) }
	switch {
	case !c.d.has(field("address")):
		c.d.add(field("address"), ErrMissing, "address (want the 7-bit I2C address of the %s, such as 0x%02x)", dev.Model, exampleAddress(dev.Model))
	case dev.Address == 0:
		// out of range: reported
	case chipAddressProblem(dev.Model, dev.Address) != "":
		c.d.add(field("address"), ErrRange, ": %s (%s)", hex(int64(dev.Address)), chipAddressProblem(dev.Model, dev.Address))
	default:
		if dev.Bus == "" {
			break
		}
		key := dev.Bus + "/" + hex(int64(dev.Address))
		c.once(addrs, key, field("address"), "I2C address %s on bus %q", hex(int64(dev.Address)), dev.Bus)
	}
	c.notAllowed(path, []string{"pin", "active_low"}, "for model %s (only gpio models have a pin)", dev.Model)
}

func exampleAddress(m Model) int {
	if isChip(m) {
		return chipExampleAddress(m)
	}
	return 0x20
}

func (c *checker) gpioDevice(dev Device, path string, pins map[string]string) {
	field := func(k string) string { return join(path, k) }
	if c.d.has(field("address")) {
		c.d.add(field("address"), ErrNotAllowed, "for model %s (only i2c models have an address)", dev.Model)
	}
	if dev.Pin == "" {
		if c.d.bad[field("pin")] {
			return // wrong type: reported
		}
		if !c.d.has(field("pin")) {
			c.d.add(field("pin"), ErrMissing, `pin (want the host's pin name, such as "GPIO17")`)
		} else {
			c.d.add(field("pin"), ErrRange, `: "" (want the host's pin name, such as "GPIO17")`)
		}
		return
	}
	// Host pin names are case-insensitive in practice ("gpio17", "GPIO17").
	key := strings.ToUpper(dev.Pin)
	c.once(pins, key, field("pin"), "pin %q", dev.Pin)
}

func (c *checker) registers(dev Device, path string) {
	rp := join(path, "registers")
	if dev.Model != ModelRegisters {
		if c.d.has(rp) {
			c.d.add(rp, ErrNotAllowed, "for model %s (only the registers model has a register map)", dev.Model)
		}
		return
	}
	if len(dev.Registers) == 0 {
		c.d.add(rp, ErrMissing, "registers (want at least one register: {name, address, type})")
		return
	}
	seen := map[string]string{}
	for i, r := range dev.Registers {
		c.unique(seen, "register name", r.Name, join(index(rp, i), "name"))
	}
}

func (c *checker) deviceSim(dev Device, path string) {
	sp := join(path, "sim")
	c.notAllowed(sp, []string{"profile", "response"}, "for model %s (only modbus and serial_line devices have it)", dev.Model)
	vp := join(sp, "values")
	if isChip(dev.Model) {
		c.chipSimValues(dev, vp)
	} else if c.d.has(vp) && dev.Model != ModelRegisters {
		c.d.add(vp, ErrNotAllowed, "for model %s (%s)", dev.Model, simValuesWant())
	} else {
		for _, name := range sortedKeys(dev.Sim.Values) {
			v := dev.Sim.Values[name]
			r := findRegister(dev, name)
			if r == nil {
				c.d.add(join(vp, name), ErrBadReference, "register %q (%s)", name, candidates("register", registerNames(dev)))
				continue
			}
			if lo, hi, ok := rawRange(r.Type); ok {
				raw := (v - r.Offset) / r.Scale
				if raw < lo || raw > hi {
					c.d.add(join(vp, name), ErrRange, ": %g is raw %g (want a raw %s, %g..%g)", v, raw, r.Type, lo, hi)
				}
			}
		}
	}
	if c.d.has(join(sp, "level")) && !isGPIO(dev.Model) {
		c.d.add(join(sp, "level"), ErrNotAllowed, "for model %s (only gpio models have a level)", dev.Model)
	}
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// namesOf lists the distinct non-empty names of xs, in order.
func namesOf[T any](xs []T, name func(T) string) []string {
	var names []string
	for _, x := range xs {
		if n := name(x); n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// find returns the first of xs that name gives the name want, or nil.
func find[T any](xs []T, want string, name func(T) string) *T {
	if i := slices.IndexFunc(xs, func(x T) bool { return name(x) == want }); i >= 0 {
		return &xs[i]
	}
	return nil
}

func busName(b Bus) string                  { return b.Name }
func deviceName(d Device) string            { return d.Name }
func registerName(r Register) string        { return r.Name }
func modbusRegName(r ModbusRegister) string { return r.Name }

func findRegister(dev Device, name string) *Register { return find(dev.Registers, name, registerName) }
func registerNames(dev Device) []string              { return namesOf(dev.Registers, registerName) }

// rawRange is the range of a register type's raw value.
func rawRange(t RegType) (lo, hi float64, ok bool) {
	if t == i2cconf.RegFloat32 {
		return -math.MaxFloat32, math.MaxFloat32, true
	}
	return t.IntRange()
}

func hex(a int64) string {
	if a < 0 {
		return fmt.Sprint(a)
	}
	return fmt.Sprintf("0x%02x", a)
}

// hasSimValues reports whether the simulator of model m takes sim.values.
func hasSimValues(m Model) bool {
	switch m {
	case ModelRegisters, ModelModbus, ModelMQTT, ModelMCP3008, ModelPulseCounter:
		return true
	}
	return isChip(m)
}

// simValuesWant says which models take sim.values, from the table of
// models, and what the others follow.
func simValuesWant() string {
	var with []string
	for _, m := range models {
		if hasSimValues(Model(m)) {
			with = append(with, m)
		}
	}
	return "sim.values is for " + oneOf(with) + "; the others follow the zones, or sim.level"
}
