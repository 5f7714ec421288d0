package manifests

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bus kinds reached through the kernel's files rather than a bus library:
// 1-Wire through the w1 driver's sysfs tree, hardware PWM through the pwm
// class, and SPI through spidev.
const (
	// BusOneWire is the kernel's 1-Wire bus (dtoverlay=w1-gpio on a Pi).
	// Device is the w1 sysfs directory; "" means DefaultW1Root.
	BusOneWire BusKind = "onewire"
	// BusPWM is one hardware PWM chip (dtoverlay=pwm-2chan on a Pi).
	// Device is the chip's sysfs directory; "" means DefaultPWMChip.
	BusPWM BusKind = "pwm"
	// BusSPI is an spidev device (dtparam=spi=on on a Pi). Device is the
	// spidev node; "" means DefaultSPIDevice. Speed is the clock in Hz.
	BusSPI BusKind = "spi"
)

// Defaults of the kernel-file buses, as a Raspberry Pi names them.
const (
	DefaultW1Root    = "/sys/bus/w1/devices"
	DefaultPWMChip   = "/sys/class/pwm/pwmchip0"
	DefaultSPIDevice = "/dev/spidev0.0"
	// DefaultSPISpeed is the SPI clock of a bus that declares none: 1 MHz,
	// within the MCP3008's 1.35 MHz at 3.3 V.
	DefaultSPISpeed = 1000000
	// DefaultPWMFrequency is the frequency of a pwm device that declares
	// none: 25 kHz, the PC fan standard and above hearing.
	DefaultPWMFrequency = 25000
	// DefaultVRef is an MCP3008's reference voltage when none is declared:
	// the Pi's 3.3 V rail.
	DefaultVRef = 3.3
)

// Edges a pulse_counter counts.
const (
	EdgeFalling = "falling"
	EdgeRising  = "rising"
	EdgeBoth    = "both"
)

// DefaultDebounce is a pulse_counter's debounce when none is declared: a
// reed switch bounces for about a millisecond; 5 ms allows 100 Hz.
const DefaultDebounce = 5 * time.Millisecond

// romRE is a 1-Wire ROM id as the kernel names it: the family code, a dash,
// and the 48-bit serial number in hex. DS18B20s have family 28.
var romRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^28-[0-9a-f]{12}$`) })

func isBusModel(m Model) bool {
	d, ok := Decl(m)
	return ok && (isKernelBus(d.Bus) || d.Bus == BusGPIO && !d.Pin)
}

// busFor is the bus kind each kernel-file model needs.
func busFor(m Model) BusKind {
	if d, ok := Decl(m); ok && d.Bus != "" {
		return d.Bus
	}
	return BusSPI
}

// busExt decodes the keys of the kernel-file buses.
func (o obj) busExt(b *Bus) {
	if b.Kind == BusSPI {
		b.Speed = DefaultSPISpeed
	}
	intIn(o, "speed", &b.Speed, 10000, 10000000, ": %d (want 10000..10000000 Hz)")
}

// deviceExt decodes the keys of the kernel-file models.
func (o obj) deviceExt(dev *Device) {
	if s, ok := o.strOK("rom"); ok {
		if !romRE().MatchString(s) {
			o.add("rom", ErrRange, ": %q (want the DS18B20's w1 id, family 28: \"28-\" and 12 lower-case hex digits, as in /sys/bus/w1/devices)", s)
		} else {
			dev.ROM = s
		}
	}
	intIn(o, "channel", &dev.Channel, 0, 15, ": %d (want the PWM chip's channel, 0..15; pwm-2chan has 0 and 1)")
	if dev.Model == ModelPWM {
		dev.Frequency = DefaultPWMFrequency
	}
	numIf(o, "frequency", &dev.Frequency, func(f float64) bool { return f >= 0.1 && f <= 1e8 }, ": %g (want 0.1..100000000 Hz)")
	if dev.Model == ModelMCP3008 {
		dev.VRef = DefaultVRef
	}
	numIf(o, "vref", &dev.VRef, func(v float64) bool { return v >= 0.25 && v <= 5.5 }, ": %g (want the MCP3008's reference, 0.25..5.5 V)")
	if dev.Model == ModelPulseCounter {
		dev.Edge, dev.Debounce, dev.PerPulse = EdgeFalling, DefaultDebounce, 1
	}
	if s, ok := o.strOK("edge"); ok {
		if s != EdgeFalling && s != EdgeRising && s != EdgeBoth {
			o.add("edge", ErrUnknownValue, "%q (want falling, rising or both)", s)
		} else {
			dev.Edge = s
		}
	}
	if o.has("debounce") {
		if d := o.dur("debounce"); d > time.Second {
			o.add("debounce", ErrRange, ": %s (want at most 1s; a longer one drops real pulses)", d)
		} else {
			dev.Debounce = d
		}
	}
	numIf(o, "per_pulse", &dev.PerPulse, positive, ": %g (want more than 0, the quantity one pulse stands for, such as 0.00222 l)")
}

// busKindExt checks the keys a kernel-file bus may have.
func (c *checker) busKindExt(b Bus, path string) {
	lineKeys := []string{"address", "port", "baud", "data_bits", "parity", "stop_bits", "rs485", "frame_gap", "retries"}
	switch b.Kind {
	case BusOneWire, BusPWM, BusSPI:
		c.notAllowed(path, lineKeys, "for %s %s bus (only Modbus and serial buses have it)", articleWord(string(b.Kind)), b.Kind)
	}
	if b.Kind != BusSPI && c.d.has(join(path, "speed")) && !c.d.bad[join(path, "speed")] {
		c.d.add(join(path, "speed"), ErrNotAllowed, "for %s %s bus (only an spi bus has a clock speed)", articleWord(string(b.Kind)), b.Kind)
	}
}

func articleWord(s string) string {
	if s == "spi" || s != "" && strings.ContainsRune("aeiu", rune(s[0])) {
		return "an"
	}
	return "a"
}

// extKeys are the device keys of the kernel-file models, with the models
// that take them.
var extKeys = []struct {
	key    string
	models []Model
}{{"rom", []Model{ModelDS18B20}}, {"channel", []Model{ModelPWM}}, {"frequency", []Model{ModelPWM}}, {"vref", []Model{ModelMCP3008}},
	{"edge", []Model{ModelPulseCounter}}, {"debounce", []Model{ModelPulseCounter}}, {"per_pulse", []Model{ModelPulseCounter}}}

// noExtKeys reports the kernel-file models' keys on a model that has none
// of them.
func (c *checker) noExtKeys(dev Device, path string) {
	if dev.Model == "" {
		return
	}
	for _, k := range extKeys {
		if !slices.Contains(k.models, dev.Model) && c.d.has(join(path, k.key)) {
			c.d.add(join(path, k.key), ErrNotAllowed, "for model %s (only %s has it)", dev.Model, oneOf(words(k.models...)))
		}
	}
}

// busDevice checks a device of a kernel-file model.
func (c *checker) busDevice(dev Device, bus *Bus, path string, seen, pins map[string]string) {
	field := func(k string) string { return join(path, k) }
	if dev.Model == ModelPulseCounter {
		c.gpioDevice(dev, path, pins)
		c.notAllowed(path, []string{"active_low", "registers"}, "for model %s (edge says which edge counts)", dev.Model)
	} else if declaredOn(dev.Model, BusGPIO) {
		c.gpioDevice(dev, path, pins)
		c.notAllowed(path, []string{"active_low", "pull", "registers"}, "for model %s (the kernel's driver drives its line)", dev.Model)
	} else {
		c.notAllowed(path, []string{"address", "pin", "active_low", "pull", "registers"}, "for model %s (it is named by its %s)", dev.Model, busKey(dev.Model))
	}
	want := busFor(dev.Model)
	if bus != nil && bus.Kind != want {
		c.d.add(field("model"), ErrNotAllowed, "on %s bus %q: %s (want %s %s bus)", bus.Kind, bus.Name, dev.Model, articleWord(string(want)), want)
	}
	switch dev.Model {
	case ModelDS18B20:
		switch {
		case !c.d.has(field("rom")):
			c.d.add(field("rom"), ErrMissing, "rom (want the DS18B20's w1 id, such as \"28-0316a2795aff\"; ls /sys/bus/w1/devices lists them)")
		case dev.ROM != "" && dev.Bus != "":
			c.once(seen, dev.Bus+"/"+dev.ROM, field("rom"), "rom %q on bus %q", dev.ROM, dev.Bus)
		}
	case ModelPWM:
		if !c.d.has(field("channel")) && !c.d.bad[field("channel")] {
			c.d.add(field("channel"), ErrMissing, "channel (want the PWM chip's channel: 0 for GPIO18, 1 for GPIO19 with pwm-2chan)")
		} else if dev.Bus != "" && !c.d.bad[field("channel")] {
			c.once(seen, dev.Bus+"/pwm"+strconv.Itoa(dev.Channel), field("channel"), "channel %d on bus %q", dev.Channel, dev.Bus)
		}
	case ModelMCP3008:
		if dev.Bus != "" {
			c.once(seen, dev.Bus+"/mcp3008", field("bus"), "mcp3008 on spi bus %q (one chip per chip select; declare another spi bus for spidev0.1)", dev.Bus)
		}
	}
	if dev.Sim != nil {
		c.busDeviceSim(dev, path)
	}
}

func busKey(m Model) string {
	switch m {
	case ModelDS18B20:
		return "rom"
	case ModelPWM:
		return "channel"
	}
	return "bus"
}

// pulseChannels are the channels of a pulse_counter.
var pulseChannels = []string{"total", "rate", "rate_per_minute"}

// pwmChannels are the channels of a pwm device.
var pwmChannels = []string{"duty", "frequency"}

// busChannel checks a capability's channel on a kernel-file model.
func (c *checker) busChannel(cp *Capability, dev *Device, path string) {
	chp := join(path, "read.channel")
	var chans []string
	switch dev.Model {
	case ModelPulseCounter:
		chans = pulseChannels
	case ModelDS18B20:
		chans = []string{"temperature"}
		if !c.d.has(chp) || cp.Read.Channel == "temperature" {
			return // one channel: it may be left out
		}
	case ModelPWM:
		chans = pwmChannels
	case ModelMCP3008:
		chans = append(slices.Clip(mcp3008Channels), InputNames(*dev)...)
	default:
		if d, ok := Decl(dev.Model); ok {
			chans = d.ChannelNames()
		}
	}
	switch {
	case !c.d.has(chp):
		c.d.add(chp, ErrMissing, "channel (want %s)", channelList(chans))
	case !slices.Contains(chans, cp.Read.Channel):
		c.d.add(chp, ErrUnknownValue, "%q (want %s)", cp.Read.Channel, channelList(chans))
	}
}

// InputNames are the names of an mcp3008's scaled inputs.
func InputNames(dev Device) []string {
	var ns []string
	for _, in := range dev.Inputs {
		if in.Name != "" {
			ns = append(ns, in.Name)
		}
	}
	return ns
}

func channelList(cs []string) string {
	if len(cs) > 24 {
		return oneOf(cs[24:]) + ", ch0..ch7 (volts), diff0..diff7 (differential, volts) or raw0..raw7 (the 10-bit code)"
	}
	if len(cs) == 24 {
		return "ch0..ch7 (volts), diff0..diff7 (differential, volts) or raw0..raw7 (the 10-bit code)"
	}
	return oneOf(cs)
}

// busChannelTypes are the types a kernel-file model's channel carries.
func busChannelTypes(m Model, channel string) []ValueType {
	if d, ok := Decl(m); ok {
		if c, ok := d.Channel(channel); ok && c.Integer {
			return []ValueType{TypeInteger, TypeNumber}
		}
	}
	return []ValueType{TypeNumber}
}

// busReadOnly says why a capability of a kernel-file model cannot have an
// action, or "".
func busReadOnly(dev *Device) string {
	if d, ok := Decl(dev.Model); ok && d.writable() {
		return ""
	}
	return fmt.Sprintf("on read-only %s device %q (want a pwm, gpio_out device or a register with writable: true)", dev.Model, dev.Name)
}

// isDS18B20 reports whether name is a ds18b20 device: a zone sensor like an
// sht3x.
func (c *checker) isDS18B20(name string) bool {
	j, ok := c.devices[name]
	return ok && c.m.Devices[j].Model == ModelDS18B20
}

func isKernelBus(k BusKind) bool { return k == BusOneWire || k == BusPWM || k == BusSPI }

// kernelBusModels names the models a kernel-file bus carries.
func kernelBusModels(k BusKind) string {
	switch k {
	case BusOneWire:
		return string(ModelDS18B20)
	case BusPWM:
		return string(ModelPWM)
	}
	return string(ModelMCP3008)
}

// busDeviceSim checks the sim settings of a kernel-file device: an mcp3008
// has the voltage of each single-ended input (ch0..ch7, 0..vref); the
// others follow the zones.
func (c *checker) busDeviceSim(dev Device, path string) {
	sp := join(path, "sim")
	c.notAllowed(sp, []string{"level", "profile", "response"}, "for model %s (only gpio, modbus and serial_line devices have it)", dev.Model)
	vp := join(sp, "values")
	if dev.Model == ModelPulseCounter {
		for _, name := range sortedKeys(dev.Sim.Values) {
			if v := dev.Sim.Values[name]; name != "rate" {
				c.d.add(join(vp, name), ErrBadReference, "value %q (want rate, the pulses per second)", name)
			} else if v < 0 || v > 10000 {
				c.d.add(join(vp, name), ErrRange, ": %g (want 0..10000 pulses per second)", v)
			}
		}
		return
	}
	if dev.Model != ModelMCP3008 {
		if c.d.has(vp) {
			c.d.add(vp, ErrNotAllowed, "for model %s (%s)", dev.Model, simValuesWant())
		}
		return
	}
	for _, name := range sortedKeys(dev.Sim.Values) {
		v := dev.Sim.Values[name]
		switch {
		case !slices.Contains(mcp3008Channels[:8], name):
			c.d.add(join(vp, name), ErrBadReference, "input %q (want ch0..ch7)", name)
		case v < 0 || v > dev.VRef:
			c.d.add(join(vp, name), ErrRange, ": %g V (want 0..%g, the reference)", v, dev.VRef)
		}
	}
}
