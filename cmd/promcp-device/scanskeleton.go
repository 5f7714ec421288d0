package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// skeleton gathers a manifest skeleton of what a scan found: a device per
// identified chip, a capability per channel, named from the model and the
// address, every one a read (no do: an action needs a policy first).
type skeleton struct {
	buses, devices, caps strings.Builder
	comments             []string
	gpio                 []gpioLine
	groups               strings.Builder
	nDevices, nCaps      int
}

// skChannel is one channel of a model: its name, unit, type and the
// plausible range a health check starts from (min == max: none).
type skChannel struct {
	name, unit, what string
	boolean          bool
	min, max         float64
}

// skOthers are the channels of the models a scan identifies whose
// declaration has no fixed channels (an ADC's inputs): the skeleton's own.
var skOthers = map[string][]skChannel{
	i2c.ChipADS1115: {{name: "a0", unit: "V", what: "Voltage on A0"}, {name: "a1", unit: "V", what: "Voltage on A1"}, {name: "a2", unit: "V", what: "Voltage on A2"}, {name: "a3", unit: "V", what: "Voltage on A3"}},
}

// skWhat names a channel in a description: "Bus voltage", "CO2".
var skWhat = map[string]string{"humidity": "Relative humidity", "pressure": "Barometric pressure", "co2": "CO2 concentration"}

// skChannels are the channels of model: a declared model's, with the
// range the chip can measure as the plausible range a health check
// starts from; else skOthers'.
func skChannels(model string) []skChannel {
	d, ok := manifests.Decl(manifests.Model(model))
	if !ok || len(d.Channels) == 0 {
		return skOthers[model] // not declared, or its channels are the device's (an ADC's inputs)
	}
	chs := make([]skChannel, len(d.Channels))
	for i, c := range d.Channels {
		what, ok := skWhat[c.Name]
		if !ok {
			what = strings.ToUpper(c.Name[:1]) + strings.ReplaceAll(c.Name[1:], "_", " ")
		}
		chs[i] = skChannel{name: c.Name, unit: c.Unit, what: what, min: c.Min, max: c.Max}
	}
	return chs
}

// skSampleKeys are the lines of a declared model's sample past its name,
// bus, model and address: its own keys with the sample's values and
// comments (an ina219's shunt).
func skSampleKeys(model string) string {
	d, ok := manifests.Decl(manifests.Model(model))
	if !ok || len(d.Channels) == 0 {
		return "" // its keys name its channels: the skeleton writes them
	}
	var b strings.Builder
	for _, line := range strings.Split(d.Sample, "\n") {
		k, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "- "), ":")
		switch k {
		case "", "name", "bus", "model", "address":
		default:
			b.WriteString("  " + line + "\n")
		}
	}
	return b.String()
}

// addI2C adds bus b and the devices found on it.
func (s *skeleton) addI2C(b scanI2CBus, found []i2c.Identity) {
	fmt.Fprintf(&s.buses, "  - name: %s\n    kind: i2c\n    device: %q\n", b.name, b.device)
	for _, id := range found {
		if id.Model == "" {
			s.comments = append(s.comments, fmt.Sprintf("i2c %s %s", b.name, id))
			continue
		}
		name := fmt.Sprintf("%s_%02x", id.Model, id.Addr)
		fmt.Fprintf(&s.devices, "  - name: %s\n    bus: %s\n    model: %s\n    address: 0x%02x   # %s\n", name, b.name, id.Model, id.Addr, id.Evidence)
		s.nDevices++
		where := fmt.Sprintf("the %s at 0x%02x on %s", strings.ToUpper(id.Model), id.Addr, b.name)
		s.devices.WriteString(skSampleKeys(id.Model))
		switch id.Model {
		case i2c.ChipADS1115:
			s.devices.WriteString("    inputs:            # each against GND, ±4.096 V: name and scale them (as: percent, milliamps)\n")
			for i := range 4 {
				fmt.Fprintf(&s.devices, "      - {name: a%d, input: a%d, full_scale: 4.096}\n", i, i)
			}
		case i2c.ChipMCP23017, i2c.ChipPCF8574:
			s.addExpander(name, id.Model, where)
			continue
		}
		s.addChannels(name, where, skChannels(id.Model))
	}
}

// addExpander lists an expander's pins as inputs, each read as a boolean:
// a pin that drives a relay becomes an output with a do (and a policy
// rule) only once someone knows what it switches.
func (s *skeleton) addExpander(name, model, where string) {
	s.devices.WriteString("    pins:              # all inputs: make a pin `mode: output` (and give its capability a do and a policy rule) once you know what it drives\n")
	n, prefix := 8, "p"
	if model == i2c.ChipMCP23017 {
		n, prefix = 16, ""
	}
	var names []string
	defer func() { s.group(name, where, names) }()
	for i := range n {
		pin := prefix + strconv.Itoa(i)
		if model == i2c.ChipMCP23017 {
			pin = fmt.Sprintf("gp%c%d", "ab"[i/8], i%8)
		}
		fmt.Fprintf(&s.devices, "      - {name: %s, pin: %d, mode: input}\n", pin, i)
		fmt.Fprintf(&s.caps, "  - name: %s_%s\n    description: %q\n    type: boolean\n    ttl: 30s\n    read: {device: %s, channel: %s}\n",
			name, pin, fmt.Sprintf("Level of pin %s of %s (true: high).", strings.ToUpper(pin), where), name, pin)
		s.nCaps++
		names = append(names, name+"_"+pin)
	}
}

// addChannels adds a capability per channel of a device.
func (s *skeleton) addChannels(dev, where string, chs []skChannel) {
	var names []string
	defer func() { s.group(dev, where, names) }()
	for _, ch := range chs {
		names = append(names, dev+"_"+ch.name)
		fmt.Fprintf(&s.caps, "  - name: %s_%s\n    description: %q\n    type: number\n    unit: %q\n    ttl: 30s\n    read: {device: %s, channel: %s}\n",
			dev, ch.name, ch.what+" at "+where+".", ch.unit, dev, ch.name)
		if ch.min != ch.max {
			fmt.Fprintf(&s.caps, "    health:\n      plausible: {min: %g, max: %g}\n", ch.min, ch.max)
		}
		s.nCaps++
	}
}

// maxGroupReads is how many reads a group holds: with can_do, the
// spec's 8 tools an endpoint.
const maxGroupReads = 7

// group puts a device's capabilities in tool groups of at most
// maxGroupReads, so that each endpoint stays within the spec's limits
// while /mcp serves them all.
func (s *skeleton) group(dev, where string, caps []string) {
	for i := 0; i < len(caps); i += maxGroupReads {
		name := dev
		if i > 0 {
			name = fmt.Sprintf("%s_%d", dev, i/maxGroupReads+1)
		}
		fmt.Fprintf(&s.groups, "  - name: %s\n    description: %q\n    capabilities: [%s]\n",
			name, "Readings of "+where+".", strings.Join(caps[i:min(i+maxGroupReads, len(caps))], ", "))
	}
}

// addW1 adds onewire bus b and its DS18B20s.
func (s *skeleton) addW1(b scanW1Bus, roms []string) {
	fmt.Fprintf(&s.buses, "  - name: %s\n    kind: onewire\n", b.name)
	if b.device != "" {
		fmt.Fprintf(&s.buses, "    device: %q\n", b.device)
	}
	for _, rom := range roms {
		m := w1Model(rom)
		if m == "" {
			s.comments = append(s.comments, fmt.Sprintf("1-Wire %s %s: unsupported family", b.name, rom))
			continue
		}
		name := "ds18b20_" + strings.TrimPrefix(rom, "28-")
		fmt.Fprintf(&s.devices, "  - name: %s\n    bus: %s\n    model: %s\n    rom: %s\n", name, b.name, m, rom)
		s.nDevices++
		s.addChannels(name, "the DS18B20 "+rom+" on "+b.name, skChannels(string(m)))
	}
}

// write writes the skeleton to path, for gateway.
func (s *skeleton) write(path, gateway string) error {
	var out strings.Builder
	out.WriteString("# Written by promcp-device scan: the devices found, one capability per\n")
	out.WriteString("# channel, each a read. Rename them for what they measure, set units and\n")
	out.WriteString("# plausible ranges for your site, and add actions (do:) with a policy.\n")
	for _, c := range s.comments {
		fmt.Fprintf(&out, "#   not added: %s\n", c)
	}
	if len(s.gpio) > 0 {
		out.WriteString("# GPIO lines (add a gpio bus and a gpio_in or gpio_out device for one):\n")
		for _, l := range s.gpio {
			use := "free"
			if l.consumer != "" {
				use = "in use by " + l.consumer
			}
			fmt.Fprintf(&out, "#   %s %s: %s\n", l.chip, orDash(l.name), use)
		}
	}
	fmt.Fprintf(&out, "version: 1\ngateway: %s\ndescription: Devices found by promcp-device scan.\n\n", gatewayName(gateway))
	fmt.Fprintf(&out, "buses:\n%s\n", s.buses.String())
	if s.nDevices == 0 {
		return fmt.Errorf("%s not written: no supported device was identified (a manifest needs one capability at least)", path)
	}
	fmt.Fprintf(&out, "devices:\n%s\ncapabilities:\n%s\n# Tool groups, each its own MCP endpoint (/mcp/<name>) within the spec's\n# limits; /mcp serves all the tools.\ngroups:\n%s",
		s.devices.String(), s.caps.String(), s.groups.String())
	if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// gatewayName makes a gateway name of a host name: lower case letters,
// digits and dashes.
func gatewayName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		case r == '_' || r == '.':
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "new-pi"
	}
	return b.String()
}
