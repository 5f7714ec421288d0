package manifests

import (
	"fmt"
	"slices"
)

// The keys and checks the I2C chip models share: the inputs of the
// ADCs (an mcp3008's too) and the pins of the expanders. The models are
// declared in model_*.go.

// isChip reports whether m is a declared I2C chip model.
func isChip(m Model) bool { return isDeclaredChip(m) }

// IsExpander reports whether m is a GPIO expander model.
func IsExpander(m Model) bool { return m == ModelMCP23017 || m == ModelPCF8574 }

// IsADS reports whether m is an ADS1x15 model.
func IsADS(m Model) bool { return m == ModelADS1115 || m == ModelADS1015 }

// ADCScale is what an ADC input's value is.
type ADCScale string

// ADC scales.
const (
	// ScaleVolts: the input's voltage, V.
	ScaleVolts ADCScale = "volts"
	// ScaleMilliamps: a current loop through ShuntOhms, mA.
	ScaleMilliamps ADCScale = "milliamps"
	// ScalePercent: linear from Zero (0 %) to Full (100 %), in volts or,
	// with ShuntOhms, in mA (a 4–20 mA loop by default).
	ScalePercent ADCScale = "percent"
)

// ADCInput is one named, scaled input of an analog-to-digital converter:
// an ads1015 or ads1115 on I2C, or an mcp3008 on SPI.
type ADCInput struct {
	Name string
	// Input is what the chip converts. On an ads1015 or ads1115, the
	// multiplexer setting: a0..a3 against GND, or a differential pair
	// a0_a1, a0_a3, a1_a3, a2_a3. On an mcp3008, ch0..ch7 against GND or
	// diff0..diff7 (the datasheet's differential pairs).
	Input string
	// FullScale is an ADS1x15's PGA full-scale range, V: 6.144, 4.096
	// (the default), 2.048, 1.024, 0.512 or 0.256. An mcp3008 has none
	// (0): its full scale is the device's VRef.
	FullScale float64
	// As is what the value is; Load fills volts when absent.
	As ADCScale
	// ShuntOhms is the resistor a current loop flows through (milliamps,
	// and percent of a current loop).
	ShuntOhms float64
	// Zero and Full are the readings at 0 % and 100 % (percent only), in
	// V, or in mA with ShuntOhms (default 4 and 20). Full may be below
	// Zero (a capacitive soil probe reads lower when wetter).
	Zero, Full float64
}

// ExpanderPin is one pin of an mcp23017 or pcf8574.
type ExpanderPin struct {
	Name string
	// Pin is the pin number: 0..15 on an mcp23017 (A0..A7 are 0..7,
	// B0..B7 8..15), 0..7 on a pcf8574.
	Pin int
	// Output makes the pin a writable output (mode: output).
	Output bool
	// ActiveLow inverts the pin: logical true is the line low (most relay
	// boards).
	ActiveLow bool
	// PullUp turns on the MCP23017's 100 kΩ pull-up of an input.
	PullUp bool
}

var (
	adcInputKeys     = []string{"name", "input", "full_scale", "as", "shunt_ohms", "zero", "full"}
	expanderPinKeys  = []string{"name", "pin", "mode", "active_low", "pull_up"}
	adcMuxes         = []string{"a0", "a1", "a2", "a3", "a0_a1", "a0_a3", "a1_a3", "a2_a3"}
	adcScales        = words(ScaleVolts, ScaleMilliamps, ScalePercent)
	adcFullScales    = []float64{6.144, 4.096, 2.048, 1.024, 0.512, 0.256}
	expanderPinModes = []string{"input", "output"}
)

// chip decodes the keys of the chip models (inputs, pins) and of the
// declared models.
func (o obj) chip(dev *Device) {
	dev.Inputs = list(o, "inputs", adcInputKeys, func(o obj, in *ADCInput) { o.adcInput(in, dev.Model) })
	dev.Pins = list(o, "pins", expanderPinKeys, obj.expanderPin)
	o.decodeDeclared(dev)
}

// adcInput decodes one of the inputs of a device of model m: the input's
// names are the chip's (a0.. on an ADS1x15, ch0.. on an MCP3008).
func (o obj) adcInput(in *ADCInput, m Model) {
	*in = ADCInput{FullScale: 4.096, As: ScaleVolts}
	muxes, want := adcMuxes, oneOf(adcMuxes)
	hint := "the analog input: a0..a3, or a differential pair such as a0_a1"
	if m == ModelMCP3008 {
		in.FullScale = 0 // its reference is the device's vref
		muxes, want = mcp3008Channels[:16], "ch0..ch7 or diff0..diff7"
		hint = "the MCP3008 input, ch0..ch7 or diff0..diff7"
	}
	in.Name = o.name()
	if s, ok := o.strOK("input"); ok {
		if slices.Contains(muxes, s) {
			in.Input = s
		} else {
			o.add("input", ErrUnknownValue, "%q (want %s)", s, want)
		}
	}
	o.require("input", hint)
	if m != ModelMCP3008 {
		numIf(o, "full_scale", &in.FullScale, func(v float64) bool { return slices.Contains(adcFullScales, v) },
			": %g (want the PGA's full-scale volts: 6.144, 4.096, 2.048, 1.024, 0.512 or 0.256)")
	}
	enum(o, "as", &in.As, adcScales, false)
	numIf(o, "shunt_ohms", &in.ShuntOhms, positive, ": %g (want the loop's shunt resistor in ohms, more than 0, such as 250)")
	if in.As == ScalePercent && in.ShuntOhms > 0 {
		in.Zero, in.Full = 4, 20
	}
	if v, ok := o.numOK("zero"); ok {
		in.Zero = v
	}
	if v, ok := o.numOK("full"); ok {
		in.Full = v
	}
}

func (o obj) expanderPin(p *ExpanderPin) {
	p.Name = o.name()
	intIn(o, "pin", &p.Pin, 0, 15, ": %d (want 0..15 on an mcp23017, 0..7 on a pcf8574)")
	o.require("pin", "the pin number, 0..15 (mcp23017) or 0..7 (pcf8574)")
	if s, ok := o.strOK("mode"); ok {
		switch s {
		case "input":
		case "output":
			p.Output = true
		default:
			o.add("mode", ErrUnknownValue, "%q (want %s)", s, oneOf(expanderPinModes))
		}
	}
	p.ActiveLow = o.boolean("active_low")
	p.PullUp = o.boolean("pull_up")
}

// chipAddressProblem says why addr is not an address of model m, or "".
func chipAddressProblem(m Model, addr uint16) string {
	if d, ok := Decl(m); ok {
		return d.addressProblem(addr)
	}
	return ""
}

// chipExampleAddress is the usual address of a chip model.
func chipExampleAddress(m Model) int {
	if d, ok := Decl(m); ok && len(d.Addresses) > 0 {
		return int(d.Addresses[0])
	}
	return 0x20
}

// ChipChannels returns the channels of a chip device: fixed for the
// sensors, the inputs or pins by name for the ADCs and expanders.
func ChipChannels(dev Device) []string {
	switch {
	}
	if d, ok := Decl(dev.Model); ok && d.named != nil {
		return d.named(dev)
	} else if ok {
		return d.ChannelNames()
	}
	return nil
}

// chipDevice checks the keys of a chip device against its model.
func (c *checker) chipDevice(dev Device, path string) {
	field := func(k string) string { return join(path, k) }
	if !hasInputs(dev.Model) && c.d.has(field("inputs")) {
		c.d.add(field("inputs"), ErrNotAllowed, "for model %s (only ads1015, ads1115 and mcp3008 have analog inputs)", dev.Model)
	}
	if !IsExpander(dev.Model) && c.d.has(field("pins")) {
		c.d.add(field("pins"), ErrNotAllowed, "for model %s (only mcp23017 and pcf8574 have pins)", dev.Model)
	}
	c.checkDeclared(dev, path)
	if hasInputs(dev.Model) {
		c.adcInputs(dev, path)
	}
	if !isChip(dev.Model) {
		return
	}
	if IsExpander(dev.Model) {
		pp := field("pins")
		if len(dev.Pins) == 0 && !c.d.bad[pp] {
			c.d.add(pp, ErrMissing, "pins (want at least one: {name, pin: 0, mode: output})")
		}
		seen, nums := map[string]string{}, map[string]string{}
		for i, p := range dev.Pins {
			ep := index(pp, i)
			c.unique(seen, "pin name", p.Name, join(ep, "name"))
			if dev.Model == ModelPCF8574 && p.Pin > 7 {
				c.d.add(join(ep, "pin"), ErrRange, ": %d (want 0..7 on a pcf8574)", p.Pin)
			} else if c.d.has(join(ep, "pin")) {
				c.once(nums, fmt.Sprint(p.Pin), join(ep, "pin"), "pin %d", p.Pin)
			}
			if dev.Model == ModelPCF8574 && c.d.has(join(ep, "pull_up")) {
				c.d.add(join(ep, "pull_up"), ErrNotAllowed, "on a pcf8574 (its pins always have a weak pull-up)")
			}
			if p.Output && c.d.has(join(ep, "pull_up")) {
				c.d.add(join(ep, "pull_up"), ErrNotAllowed, "on an output pin")
			}
		}
	}
}

// hasInputs reports whether model m has analog inputs (devices[].inputs).
func hasInputs(m Model) bool { return IsADS(m) || m == ModelMCP3008 }

// adcInputs checks the inputs of an ADC device: names unique (and on an
// mcp3008 not one of the chip's own channels), and each scale's keys. An
// ads1015 or ads1115 has at least one input; an mcp3008's channels are
// there without any.
func (c *checker) adcInputs(dev Device, path string) {
	ip := join(path, "inputs")
	if IsADS(dev.Model) && len(dev.Inputs) == 0 && !c.d.bad[ip] {
		c.d.add(ip, ErrMissing, "inputs (want at least one: {name, input: a0})")
	}
	seen := map[string]string{}
	for i, in := range dev.Inputs {
		p := index(ip, i)
		if dev.Model == ModelMCP3008 && slices.Contains(mcp3008Channels, in.Name) {
			c.d.add(join(p, "name"), ErrDuplicate, "input name %q (the chip's own channel has it; choose another, such as \"soil_moisture\")", in.Name)
		} else {
			c.unique(seen, "input name", in.Name, join(p, "name"))
		}
		if dev.Model == ModelMCP3008 && c.d.has(join(p, "full_scale")) {
			c.d.add(join(p, "full_scale"), ErrNotAllowed, "for model mcp3008 (its full scale is the device's vref)")
		}
		switch in.As {
		case ScaleMilliamps:
			if in.ShuntOhms == 0 && !c.d.bad[join(p, "shunt_ohms")] {
				c.d.add(join(p, "shunt_ohms"), ErrMissing, "shunt_ohms (want the loop's shunt resistor, such as 150 for 0.6–3 V at 4–20 mA)")
			}
			c.notAllowed(p, []string{"zero", "full"}, "for as: milliamps (only as: percent has a span)")
		case ScalePercent:
			if in.ShuntOhms == 0 {
				for _, k := range []string{"zero", "full"} {
					if !c.d.has(join(p, k)) {
						c.d.add(join(p, k), ErrMissing, "%s (want the volts that read as %s %%, or shunt_ohms for a 4–20 mA loop)", k, map[string]string{"zero": "0", "full": "100"}[k])
					}
				}
			}
			if in.Zero == in.Full && c.d.has(join(p, "full")) {
				c.d.add(join(p, "full"), ErrRange, ": %g equals zero (want a span)", in.Full)
			}
		case ScaleVolts:
			c.notAllowed(p, []string{"shunt_ohms", "zero", "full"}, "for as: %s (want as: milliamps or percent)", in.As)
		}
	}
}

// chipChannel checks a capability's channel on a chip device.
func (c *checker) chipChannel(cp *Capability, dev *Device, chp string) {
	chans := ChipChannels(*dev)
	switch {
	case !c.d.has(chp):
		c.d.add(chp, ErrMissing, "channel (a channel of %s: %s)", dev.Name, candidates("channel", chans))
	case !slices.Contains(chans, cp.Read.Channel):
		c.d.add(chp, ErrBadReference, "channel %q of device %q (%s)", cp.Read.Channel, dev.Name, candidates("channel", chans))
	}
}

// chipWritable reports whether a chip's channel takes a do_*: an output pin.
func chipWritable(dev Device, channel string) bool {
	for _, p := range dev.Pins {
		if p.Name == channel {
			return p.Output
		}
	}
	return false
}

// chipSimValues checks a chip device's sim values: channels by name; an
// expander's pins 0 or 1.
func (c *checker) chipSimValues(dev Device, vp string) {
	chans := ChipChannels(dev)
	for _, name := range sortedKeys(dev.Sim.Values) {
		v := dev.Sim.Values[name]
		switch {
		case !slices.Contains(chans, name):
			c.d.add(join(vp, name), ErrBadReference, "channel %q (%s)", name, candidates("channel", chans))
		case IsExpander(dev.Model) && v != 0 && v != 1:
			c.d.add(join(vp, name), ErrRange, ": %g (want 0 or 1, the pin's logical level)", v)
		}
	}
}
