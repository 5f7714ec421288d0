package manifests

import (
	"slices"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// FaultKind is a fault the simulator injects at the bus.
type FaultKind string

// Fault kinds. Which apply to which model is [FaultApplies]'s table.
const (
	// FaultDropout: the device does not answer at all (I2C: every
	// transaction NACKed at its address).
	FaultDropout FaultKind = "dropout"
	// FaultNACK: the device acknowledges commands but refuses to deliver
	// data (I2C: reads NACKed, as a busy chip does). It is the device-level
	// error flag; on Modbus it is an exception response.
	FaultNACK FaultKind = "nack"
	// FaultStuck: the device repeats, bit for bit, what it answered when
	// the fault began.
	FaultStuck FaultKind = "stuck"
	// FaultNoise: a burst of spikes of alternating sign, each between half
	// and all of Amplitude, on the value.
	FaultNoise FaultKind = "noise"
	// FaultImplausible: the device reports Value (or, without one, a railed
	// reading: the largest raw value).
	FaultImplausible FaultKind = "implausible"
	// FaultSlow: every transaction takes Delay longer (real time), within
	// the bus timeout.
	FaultSlow FaultKind = "slow"
	// FaultTimeout: every transaction holds the bus for Delay (default twice
	// the bus timeout, real time), so that the driver's timeout fires.
	FaultTimeout FaultKind = "timeout"
	// FaultCRC: the checksum byte of the data is corrupted (SHT3x).
	FaultCRC FaultKind = "crc"
)

// FaultKinds lists every fault kind.
func FaultKinds() []FaultKind {
	return []FaultKind{FaultDropout, FaultNACK, FaultStuck, FaultNoise, FaultImplausible, FaultSlow, FaultTimeout, FaultCRC}
}

// FaultApplies reports whether the simulator can inject fault k on a device
// of model m: a declared model's are its declaration's Faults.
func FaultApplies(m Model, k FaultKind) bool {
	if d, ok := Decl(m); ok {
		return d.FaultApplies(k)
	}
	return false
}

// Fault is one fault with its parameters.
type Fault struct {
	Kind FaultKind
	// Channel narrows a value fault (noise, implausible) to one channel:
	// temperature or humidity of an SHT3x (default temperature), a register
	// of a registers device (default its first register).
	Channel string
	// Value is what an implausible fault reports, in the channel's unit;
	// nil means a railed reading.
	Value *float64
	// Amplitude is the size of noise spikes, in the channel's unit (an
	// SHT3x's humidity gets ten times it, in %). Zero means 5.
	Amplitude float64
	// Delay is the added latency of slow (zero means 50ms) and how long
	// timeout holds the bus (zero means twice the bus timeout).
	Delay time.Duration
}

// DefaultNoiseAmplitude is a noise fault's amplitude when it gives none.
const DefaultNoiseAmplitude = 5.0

// DefaultSlowDelay is a slow fault's delay when it gives none.
const DefaultSlowDelay = 50 * time.Millisecond

// Scenario is a timeline of faults on the simulator's clock, as a scenario
// file declares it.
type Scenario struct {
	// File is the path the scenario was read from.
	File string
	// Name names the scenario.
	Name        string
	Description string
	// Manifest is the path of the manifest the scenario is written for, as
	// the file gives it (relative to the scenario file); "" when not given.
	Manifest string
	Faults   []ScheduledFault
}

// IsScenario reports whether data looks like a scenario file rather than a
// manifest: a YAML mapping with a top-level scenario key. It does not
// validate anything.
func IsScenario(data []byte) bool {
	f, err := parseBytes(data)
	if err != nil || f == nil {
		return false
	}
	for _, doc := range f.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if m, ok := doc.Body.(*ast.MappingNode); ok {
			for _, mv := range m.Values {
				if mv != nil && mv.Key != nil && keyString(mv.Key) == "scenario" {
					return true
				}
			}
		}
		return false
	}
	return false
}

// ScheduledFault is a fault on a device from At to At+For after the
// scenario starts, on the simulator's clock.
type ScheduledFault struct {
	At time.Duration
	// For is how long the fault lasts; zero means until the end.
	For    time.Duration
	Device string
	Fault  Fault
}

var (
	scenarioKeys = []string{"version", "scenario", "description", "manifest", "faults"}
	faultKeys    = []string{"at", "device", "fault", "for", "channel", "value", "amplitude", "delay"}
)

// LoadScenario reads a scenario file and checks it against m, the manifest
// it runs on. See ParseScenario for the errors.
func LoadScenario(path string, m *Manifest) (*Scenario, error) {
	return loadFile(path, "scenario", func(file string, data []byte) (*Scenario, error) { return ParseScenario(file, data, m) })
}

// ParseScenario decodes a scenario held in data and checks it against m:
// every device exists, every fault applies to its device's model, every
// parameter fits its fault. Errors are reported as Parse reports them: the
// errors.Join of one *Error per problem, sorted by position.
//
// The format:
//
//	key          type            default   constraint
//	version      integer         required  1
//	scenario     name            required  names the scenario
//	description  string          ""
//	manifest     string          ""        the manifest the scenario is written for, relative to the scenario file (lint uses it)
//	faults       list of fault   none
//
// A fault (faults[]):
//
//	key        type      default   constraint
//	at         duration  required  0s or more: when the fault starts, after the scenario starts (simulated time)
//	device     string    required  a device of the manifest
//	fault      string    required  dropout, nack, stuck, noise, implausible, slow, timeout or crc; must apply to the device's model (FaultApplies)
//	for        duration  forever   more than 0: how long the fault lasts; then the device recovers
//	channel    string    see Fault noise and implausible only: a channel of the device
//	value      number    railed    implausible only: the value reported, in the channel's unit
//	amplitude  number    5         noise only: more than 0, the spike size in the channel's unit
//	delay      duration  see Fault slow and timeout only
//
// When two faults on one device overlap, the later in the file wins.
func ParseScenario(file string, data []byte, m *Manifest) (*Scenario, error) {
	return parse(file, data, func(d *decoder, root ast.Node) *Scenario { return d.scenario(root, m) })
}

func (d *decoder) scenario(root ast.Node, m *Manifest) *Scenario {
	sc := &Scenario{File: d.p.file}
	o, ok := d.document(root, scenarioKeys, "scenario and faults")
	if !ok {
		return sc
	}
	o.version()
	sc.Name, _ = d.name(o.f["scenario"], "scenario")
	o.require("scenario", "a lower_snake_case name for the scenario")
	sc.Description = o.str("description")
	sc.Manifest = o.str("manifest")
	sc.Faults = list(o, "faults", faultKeys, func(o obj, sf *ScheduledFault) { o.fault(sf, m) })
	return sc
}

// faultParams are the faults each fault parameter belongs to.
var faultParams = map[string][]FaultKind{
	"channel":   {FaultNoise, FaultImplausible},
	"value":     {FaultImplausible},
	"amplitude": {FaultNoise},
	"delay":     {FaultSlow, FaultTimeout},
}

func (o obj) fault(sf *ScheduledFault, m *Manifest) {
	if s, ok := o.strOK("at"); ok {
		at, err := time.ParseDuration(s)
		switch {
		case err != nil:
			o.add("at", ErrType, `: got string %q, want a duration such as "0s", "10s" or "2m"`, s)
		case at < 0:
			o.add("at", ErrRange, ": %s (want 0s or more)", s)
		default:
			sf.At = at
		}
	}
	o.require("at", `when the fault starts, such as "10s"`)
	sf.For = o.dur("for")
	sf.Device = o.requiredStr("device", "the name of a device")
	kinds := words(FaultKinds()...)
	kindOK := enum(o, "fault", &sf.Fault.Kind, kinds, true)
	sf.Fault.Channel = o.str("channel")
	sf.Fault.Value = o.numPtr("value")
	if a, ok := o.numOK("amplitude"); ok {
		if a <= 0 {
			o.add("amplitude", ErrRange, ": %g (want more than 0)", a)
		}
		sf.Fault.Amplitude = a
	}
	sf.Fault.Delay = o.dur("delay")
	if kindOK {
		for _, key := range []string{"channel", "value", "amplitude", "delay"} {
			if o.has(key) && !slices.Contains(faultParams[key], sf.Fault.Kind) {
				o.add(key, ErrNotAllowed, "for fault %s (%s is a parameter of %s)", sf.Fault.Kind, key, oneOf(words(faultParams[key]...)))
			}
		}
	}
	if m != nil && sf.Device != "" {
		o.faultDevice(*sf, m, kindOK)
	}
}

// faultDevice checks a fault against its device: it exists, the fault
// applies to its model, and a channel is one of its channels.
func (o obj) faultDevice(sf ScheduledFault, m *Manifest, kindOK bool) {
	dev := find(m.Devices, sf.Device, deviceName)
	if dev == nil {
		o.add("device", ErrBadReference, "device %q (%s)", sf.Device, candidates("device", namesOf(m.Devices, deviceName)))
		return
	}
	switch {
	case kindOK && !FaultApplies(dev.Model, sf.Fault.Kind):
		var can []FaultKind
		for _, k := range FaultKinds() {
			if FaultApplies(dev.Model, k) {
				can = append(can, k)
			}
		}
		o.add("fault", ErrNotAllowed, "on %s device: %s (want %s)", article(dev.Model), sf.Fault.Kind, oneOf(words(can...)))
	case o.has("channel"):
		chans := ChipChannels(*dev)
		if d, ok := Decl(dev.Model); ok && d.open != nil && d.open(*dev) {
			break // its own channels are any name
		}
		if !slices.Contains(chans, sf.Fault.Channel) {
			o.add("channel", ErrBadReference, "channel %q of device %q (%s)", sf.Fault.Channel, dev.Name, candidates("channel", chans))
		}
	}
}
