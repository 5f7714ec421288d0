package manifests

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// channelTypes are the capability types that a model's channels can carry:
// pins are booleans, the sensor gives numbers, registers numbers or integers.
func channelTypes(m Model) []ValueType {
	switch m {
	case ModelRegisters:
		return []ValueType{TypeNumber, TypeInteger}
	case ModelGPIOIn, ModelGPIOOut:
		return []ValueType{TypeBoolean}
	case ModelSerialLine:
		return []ValueType{TypeNumber, TypeInteger}
	case ModelDS18B20, ModelPWM, ModelMCP3008, ModelPulseCounter:
		return []ValueType{TypeNumber}
	}
	if d, ok := Decl(m); ok && d.Type != "" {
		return []ValueType{d.Type}
	} else if ok {
		return []ValueType{TypeNumber}
	}
	return nil
}

func (c *checker) checkCapabilities() {
	names := map[string]string{}
	// tools maps every tool name to the path that declares it. can_do is
	// always served.
	tools := map[string]string{"can_do": ""}
	deviceNames := namesOf(c.m.Devices, deviceName)
	for i := range c.m.Capabilities {
		cp := &c.m.Capabilities[i]
		path := index("capabilities", i)
		if c.unique(names, "capability name", cp.Name, join(path, "name")) {
			c.tool(tools, "read_"+cp.Name, join(path, "name"))
		}
		var dev *Device
		if cp.Read.Device != "" && !c.d.bad["devices"] {
			if j, ok := c.devices[cp.Read.Device]; ok {
				dev = &c.m.Devices[j]
			} else {
				c.d.add(join(path, "read.device"), ErrBadReference, "device %q (%s)", cp.Read.Device, candidates("device", deviceNames))
			}
		}
		var reg *Register
		if dev != nil {
			reg = c.channel(cp, dev, path)
		}
		c.valueType(cp, path)
		c.health(cp, path)
		c.observe(cp, path)
		if cp.Do != nil {
			c.action(cp, dev, reg, path, tools)
		} else if cp.Type == TypeEnum {
			c.d.add(join(path, "do.constraints.enum"), ErrMissing, "enum (want the allowed values, such as [off, low, high])")
		}
	}
	for i := range c.m.Capabilities {
		cp := &c.m.Capabilities[i]
		if cp.Do != nil {
			c.dependsOn(cp, index("capabilities", i), names)
		}
	}
}

// health checks the health options against the capability's type: a range
// and stuck detection need a number, a rate a number or a boolean.
func (c *checker) health(cp *Capability, path string) {
	hp := join(path, "health")
	numeric := cp.Type == TypeNumber || cp.Type == TypeInteger
	if !slices.Contains(valueTypes, string(cp.Type)) || numeric {
		return
	}
	if c.d.has(join(hp, "plausible")) {
		c.d.add(join(hp, "plausible"), ErrNotAllowed, "for type %s (only number and integer have a plausible range)", cp.Type)
	}
	c.notAllowed(hp, []string{"stuck_samples", "stuck_for"}, "for type %s (stuck detection needs a noisy number; a %s may rightly hold its value)", cp.Type, cp.Type)
	if cp.Type == TypeEnum && c.d.has(join(hp, "max_rate")) {
		c.d.add(join(hp, "max_rate"), ErrNotAllowed, "for type enum (only number, integer and boolean have a rate of change)")
	}
}

// dependsOn checks that an action depends on declared capabilities other
// than its own.
func (c *checker) dependsOn(cp *Capability, path string, names map[string]string) {
	dp := join(path, "do.depends_on")
	var all []string
	for _, o := range c.m.Capabilities {
		if o.Name != "" && o.Name != cp.Name {
			all = append(all, o.Name)
		}
	}
	seen := map[string]string{}
	for j, name := range cp.Do.DependsOn {
		p := index(dp, j)
		switch {
		case name == "":
			// empty: reported
		case name == cp.Name:
			c.d.add(p, ErrNotAllowed, "here: %q is this capability (its own reading is always checked)", name)
		default:
			if _, ok := names[name]; !ok {
				c.d.add(p, ErrBadReference, "capability %q (%s)", name, candidates("capability", all))
			} else {
				c.unique(seen, "dependency", name, p)
			}
		}
	}
}

// tool adds a tool name to the namespace, reporting a collision.
func (c *checker) tool(tools map[string]string, name, path string) {
	first, dup := tools[name]
	switch {
	case dup && first == "":
		c.d.add(path, ErrDuplicate, "tool %q (the built-in can_do tool has this name)", name)
	case dup:
		c.d.add(path, ErrDuplicate, "tool %q (first at %s, %s)", name, c.first(first, path), first)
	default:
		tools[name] = path
		if len(name) > maxToolName {
			c.d.add(path, ErrBadName, "%q (tool names are at most %d characters; this one is %d)", name, maxToolName, len(name))
		}
	}
}

// channel checks the read binding's channel and the capability's type
// against the device model, and returns the bound register, if any.
func (c *checker) channel(cp *Capability, dev *Device, path string) *Register {
	chp := join(path, "read.channel")
	var reg *Register
	switch dev.Model {
	case ModelRegisters:
		switch {
		case !c.d.has(chp):
			c.d.add(chp, ErrMissing, "channel (a register of %s: %s)", dev.Name, candidates("register", registerNames(*dev)))
		default:
			if reg = findRegister(*dev, cp.Read.Channel); reg == nil {
				c.d.add(chp, ErrBadReference, "register %q of device %q (%s)", cp.Read.Channel, dev.Name, candidates("register", registerNames(*dev)))
			}
		}
	case ModelGPIOIn, ModelGPIOOut:
		if c.d.has(chp) {
			c.d.add(chp, ErrNotAllowed, "for model %s (a pin has one channel, its level; leave channel out)", dev.Model)
		}
	case ModelModbus:
		c.modbusChannel(cp, dev, path)
		return nil
	case ModelMQTT:
		c.mqttChannel(cp, dev, path)
		return nil
	case ModelDS18B20, ModelPWM, ModelMCP3008, ModelPulseCounter:
		c.busChannel(cp, dev, path)
		if want := busChannelTypes(dev.Model, cp.Read.Channel); slices.Contains(valueTypes, string(cp.Type)) && !slices.Contains(want, cp.Type) {
			c.d.add(join(path, "type"), ErrNotAllowed, "on %s channel: %s (want %s)", article(dev.Model), cp.Type, oneOf(words(want...)))
		}
		return nil
	case ModelSerialLine:
		chans := LineChannels(dev.Line)
		switch {
		case !c.d.has(chp):
			c.d.add(chp, ErrMissing, "channel (a named group of %s's response: %s)", dev.Name, candidates("channel", chans))
		case len(chans) > 0 && !slices.Contains(chans, cp.Read.Channel):
			c.d.add(chp, ErrBadReference, "channel %q of device %q (%s)", cp.Read.Channel, dev.Name, candidates("channel", chans))
		}
	default:
		if !isDeclared(dev.Model) {
			return nil // unknown model: reported
		}
		c.chipChannel(cp, dev, chp)
	}
	if want := channelTypes(dev.Model); slices.Contains(valueTypes, string(cp.Type)) && !slices.Contains(want, cp.Type) {
		c.d.add(join(path, "type"), ErrNotAllowed, "on %s channel: %s (want %s)", article(dev.Model), cp.Type, oneOf(words(want...)))
	}
	return reg
}

// valueType checks the unit against the capability's type.
func (c *checker) valueType(cp *Capability, path string) {
	up := join(path, "unit")
	switch cp.Type {
	case TypeNumber, TypeInteger:
		if cp.Unit == "" && !c.d.bad[up] {
			c.d.add(up, ErrMissing, "unit (want the unit of the physical quantity, such as \"°C\")")
		}
	case TypeBoolean, TypeEnum:
		if c.d.has(up) {
			c.d.add(up, ErrNotAllowed, "for type %s (only number and integer have a unit)", cp.Type)
		}
	}
}

// action checks a capability's do side.
func (c *checker) action(cp *Capability, dev *Device, reg *Register, path string, tools map[string]string) {
	dp := join(path, "do")
	a := cp.Do
	if a.Tool != "" {
		c.tool(tools, a.Tool, join(dp, "tool"))
	}
	if len(a.SideEffects) == 0 {
		c.d.add(join(dp, "side_effects"), ErrMissing, "side_effects (want what an agent should know happens, such as [\"draws 2 kW while on\"])")
	}
	if dev != nil {
		switch {
		case isChip(dev.Model) && !IsExpander(dev.Model) || dev.Model == ModelGPIOIn || dev.Model == ModelSerialLine:
			c.d.add(dp, ErrNotAllowed, "on read-only %s device %q (want a gpio_out device or a register with writable: true)", dev.Model, dev.Name)
		case isChip(dev.Model) && !chipWritable(*dev, cp.Read.Channel):
			c.d.add(dp, ErrNotAllowed, "on %s channel %q of device %q (want an expander pin with mode: output)", dev.Model, cp.Read.Channel, dev.Name)
		case isBusModel(dev.Model) && busReadOnly(dev) != "":
			c.d.add(dp, ErrNotAllowed, "%s", busReadOnly(dev))
		case reg != nil && !reg.Writable:
			c.d.add(dp, ErrNotAllowed, "on read-only register %q of device %q (want writable: true on the register)", reg.Name, dev.Name)
		case dev.Model == ModelModbus:
			if mr := findModbusRegister(*dev, cp.Read.Channel); mr != nil && !mr.Writable {
				c.d.add(dp, ErrNotAllowed, "on read-only register %q of device %q (want writable: true on the register)", mr.Name, dev.Name)
			}
		}
	}
	cs := join(dp, "constraints")
	k := a.Constraints
	numeric := cp.Type == TypeNumber || cp.Type == TypeInteger
	for _, b := range []struct {
		key string
		v   *float64
	}{{"min", k.Min}, {"max", k.Max}, {"step", k.Step}} {
		if b.v != nil && !numeric && cp.Type != "" && slices.Contains(valueTypes, string(cp.Type)) {
			c.d.add(join(cs, b.key), ErrNotAllowed, "for type %s (only number and integer have %s)", cp.Type, b.key)
		}
	}
	if k.Min != nil && k.Max != nil && *k.Min > *k.Max {
		c.d.add(join(cs, "max"), ErrRange, ": %g is less than min %g", *k.Max, *k.Min)
	}
	if k.Step != nil && *k.Step <= 0 {
		c.d.add(join(cs, "step"), ErrRange, ": %g (want more than 0)", *k.Step)
	}
	ep := join(cs, "enum")
	switch {
	case cp.Type == TypeEnum && len(k.Enum) == 0:
		c.d.add(ep, ErrMissing, "enum (want the allowed values, such as [off, low, high])")
	case cp.Type == TypeEnum:
		seen := map[string]string{}
		for i, v := range k.Enum {
			c.unique(seen, "enum value", v, index(ep, i))
		}
	case c.d.has(ep) && slices.Contains(valueTypes, string(cp.Type)):
		c.d.add(ep, ErrNotAllowed, "for type %s (only enum has a list of values)", cp.Type)
	}
	if a.SafeValue != nil {
		if kind, why := safeValueProblem(cp.Type, k, a.SafeValue); why != "" {
			c.d.add(join(dp, "safe_value"), kind, ": %s", why)
		}
	}
}

// safeValueProblem says why v cannot be the safe value of an action of
// type t with constraints k (ErrType or ErrRange), or "".
func safeValueProblem(t ValueType, k Constraints, v any) (error, string) {
	switch t {
	case TypeBoolean:
		if _, ok := v.(bool); !ok {
			return ErrType, fmt.Sprintf("%s (want true or false for a boolean capability)", quoted(v))
		}
	case TypeEnum:
		s, ok := v.(string)
		if !ok || !slices.Contains(k.Enum, s) {
			return ErrRange, fmt.Sprintf("%s (want one of the constraints' enum values: %s)", quoted(v), strings.Join(k.Enum, ", "))
		}
	case TypeNumber, TypeInteger:
		f, ok := v.(float64)
		switch {
		case !ok:
			return ErrType, fmt.Sprintf("%s (want a number)", quoted(v))
		case t == TypeInteger && f != math.Trunc(f):
			return ErrType, fmt.Sprintf("%v (want an integer)", f)
		case k.Min != nil && f < *k.Min:
			return ErrRange, fmt.Sprintf("%v is below the constraints' min %v", f, *k.Min)
		case k.Max != nil && f > *k.Max:
			return ErrRange, fmt.Sprintf("%v is above the constraints' max %v", f, *k.Max)
		case k.Step != nil && *k.Step > 0:
			base := 0.0
			if k.Min != nil {
				base = *k.Min
			}
			n := (f - base) / *k.Step
			if math.Abs(n-math.Round(n)) > 1e-9*math.Max(1, math.Abs(n)) {
				return ErrRange, fmt.Sprintf("%v is not on the constraints' step %v from %v", f, *k.Step, base)
			}
		}
	}
	return nil, ""
}

func (c *checker) checkSim() {
	s := c.m.Sim
	if s == nil {
		return
	}
	zones := map[string]string{}
	sensors := map[string]string{} // sensor name → path of first zone use
	sht3x := c.zoneSensor
	gpioOut := func(name, p string) bool { return c.simDevice(name, p, ModelGPIOOut) }
	for i, z := range s.Zones {
		zp := index("sim.zones", i)
		c.unique(zones, "zone name", z.Name, join(zp, "name"))
		// A sensor measures one zone; a heater, vent or fan is listed once
		// in its zone.
		for _, l := range []struct {
			key   string
			names []string
			fits  func(name, path string) bool
			seen  map[string]string
		}{{"sensors", z.Sensors, sht3x, sensors}, {"heaters", z.Heaters, gpioOut, map[string]string{}},
			{"vents", z.Vents, gpioOut, map[string]string{}}, {"fans", z.Fans, c.simFan, map[string]string{}}} {
			for j, name := range l.names {
				if p := index(join(zp, l.key), j); l.fits(name, p) {
					c.unique(l.seen, strings.TrimSuffix(l.key, "s"), name, p)
				}
			}
		}
	}
}

// ZoneSensorModels are the models a zone's sensors may be: every
// temperature sensor, which the zone's air (its heaters, vents and fans)
// drives in the simulator.
// The declared models with Zone are among them.
var ZoneSensorModels = declaredZoneSensors()

// zoneSensor checks that name is a device of one of ZoneSensorModels.
func (c *checker) zoneSensor(name, path string) bool {
	if j, ok := c.devices[name]; ok && slices.Contains(ZoneSensorModels, c.m.Devices[j].Model) {
		return true
	} else if ok && name != "" {
		if got := c.m.Devices[j].Model; slices.Contains(models, string(got)) {
			c.d.add(path, ErrNotAllowed, "here: %q is %s device (a zone's sensor measures its air: want %s)", name, article(got), oneOf(words(ZoneSensorModels...)))
		}
		return false
	}
	if name == "" || c.d.bad["devices"] {
		return c.simDevice(name, path, ModelSHT3x)
	}
	var names []string
	for _, dev := range c.m.Devices {
		if slices.Contains(ZoneSensorModels, dev.Model) && dev.Name != "" {
			names = append(names, dev.Name)
		}
	}
	c.d.add(path, ErrBadReference, "device %q (%s)", name, candidates("temperature sensor", names))
	return false
}

// simDevice checks that name is a device of model want.
func (c *checker) simDevice(name, path string, want Model) bool {
	if name == "" {
		if c.d.has(path) {
			c.d.add(path, ErrBadReference, `device "" (want the name of %s device)`, article(want))
		}
		return false
	}
	j, ok := c.devices[name]
	if !ok && c.d.bad["devices"] {
		return false
	}
	if !ok {
		var names []string
		for _, dev := range c.m.Devices {
			if dev.Model == want && dev.Name != "" {
				names = append(names, dev.Name)
			}
		}
		c.d.add(path, ErrBadReference, "device %q (%s)", name, candidates(string(want)+" device", names))
		return false
	}
	if got := c.m.Devices[j].Model; !isI2C(got) && !isGPIO(got) {
		return false // unknown model: reported
	} else if got != want {
		c.d.add(path, ErrNotAllowed, "here: %q is %s device (want %s device)", name, article(got), article(want))
		return false
	}
	return true
}

// article prefixes a model with "a" or "an" as it is read aloud.
func article(m Model) string {
	if d, ok := Decl(m); ok {
		return d.articled()
	}
	return "a " + string(m)
}

// quoted formats a scalar for an error: strings quoted, others as they are.
func quoted(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}
