package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"
	pi2c "periph.io/x/conn/v3/i2c"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/manifests"
)

// Readings of a sensor that belongs to no zone.
const (
	DefaultTemperature = manifests.DefaultSimTemperature // °C
	DefaultHumidity    = manifests.DefaultSimHumidity    // %RH
)

// World is a simulated gateway: the I²C buses and GPIO pins of a manifest,
// the devices on them and the zones they measure and act on.
//
// Create one with [New]. A World is safe for concurrent use.
type World struct {
	clk clock.Clock

	mu    sync.Mutex // guards everything below and all device and zone state
	zones []*zone
	buses map[string]*busState // by manifest bus name
	pins  map[string]*pinState // by host pin name

	models   map[string]manifests.Model // by device name
	seed     int64
	injected map[string]*faultState // by device name
	scenario []*faultState
	faultSeq uint64

	slaves      []*ModbusSlave          // in manifest order
	slaveByName map[string]*ModbusSlave // by device name
	modbusBus   map[string]manifests.Bus
	slaveBus    map[string]string // device name → bus name
	lineByName  map[string]*LineInstrument
	lineBus     map[string][]*LineInstrument // serial bus name → instruments
	heaters     []*pinState                  // every zone heater, once
	kf          *kernelFiles                 // DS18B20s and PWM channels; nil when none
	mqtt        *mqttWorld                   // simulated MQTT devices; nil when none
	mqttBuses   []string                     // mqtt bus names, served by the embedded broker
	mqttLevel   byte                         // the newest MQTT protocol level the buses declare
}

// ZoneState is a snapshot of a zone's air.
type ZoneState struct {
	Temperature float64 // °C
	Humidity    float64 // relative humidity, %
}

// New builds the simulated world of m on the clock clk (nil means real
// time, [clock.NewScaled](1)). m.Sim may be nil: then there are no zones, and
// every SHT3x reads a constant [DefaultTemperature] and [DefaultHumidity].
//
// New fails when m refers to something it does not define (a zone's device,
// a register in Sim.Values) or a register's initial value does not fit; a
// manifest that passed validation builds.
func New(m *manifests.Manifest, clk clock.Clock) (*World, error) {
	if clk == nil {
		clk = clock.NewScaled(1)
	}
	w := &World{
		clk:         clk,
		buses:       make(map[string]*busState),
		pins:        make(map[string]*pinState),
		models:      make(map[string]manifests.Model),
		injected:    make(map[string]*faultState),
		seed:        1,
		slaveByName: make(map[string]*ModbusSlave),
		modbusBus:   make(map[string]manifests.Bus),
		slaveBus:    make(map[string]string),
		lineByName:  make(map[string]*LineInstrument),
		lineBus:     make(map[string][]*LineInstrument),
	}
	if m.Sim != nil && m.Sim.Seed != 0 {
		w.seed = m.Sim.Seed
	}
	for _, b := range m.Buses {
		if b.Kind == manifests.BusI2C {
			timeout := b.Timeout
			if timeout <= 0 {
				timeout = manifests.DefaultTimeout
			}
			w.buses[b.Name] = &busState{name: b.Name, devices: make(map[uint16]device), timeout: timeout}
		}
		if b.Kind.IsModbus() {
			w.modbusBus[b.Name] = b
		}
	}

	bl := &build{now: clk.Now(), devs: map[string]manifests.Device{}, pinOf: map[string]*pinState{}, shts: map[string]*sht3x{}, bmes: map[string]*bme280{}, airs: map[string]*air{}}
	table := models()
	for _, d := range m.Devices {
		bl.devs[d.Name] = d
		w.models[d.Name] = d.Model
		add, ok := table[d.Model]
		if !ok {
			return nil, fmt.Errorf("sim: device %s: unknown model %q", d.Name, d.Model)
		}
		if err := add(w, d, bl); err != nil {
			return nil, err
		}
	}
	if w.mqtt != nil {
		w.mqtt.caps = m.Capabilities
	}
	for _, b := range m.Buses {
		if b.Kind == manifests.BusMQTT {
			w.mqttBuses = append(w.mqttBuses, b.Name)
			if b.MQTT != nil {
				w.mqttLevel = max(w.mqttLevel, byte(b.MQTT.Protocol))
			}
		}
	}
	if m.Sim == nil {
		return w, nil
	}
	if err := w.addZones(m.Sim, bl); err != nil {
		return nil, err
	}
	return w, nil
}

// addZones builds the zones of the simulation and ties their sensors,
// heaters, fans and vents to the devices added before.
func (w *World) addZones(sc *manifests.Sim, bl *build) error {
	seed := sc.Seed
	if seed == 0 {
		seed = 1
	}
	for i, zc := range sc.Zones {
		z := newZone(zc, bl.now, rand.New(rand.NewPCG(uint64(seed), uint64(i))))
		for _, name := range zc.Sensors {
			if w.zoneSensor(name, z) {
				continue
			}
			if b, ok := bl.bmes[name]; ok {
				b.zone = z
				continue
			}
			if a, ok := bl.airs[name]; ok && a.decl.Zone {
				a.zone = z
				continue
			}
			s, ok := bl.shts[name]
			if !ok {
				return fmt.Errorf("sim: zone %s: sensor %q is not a temperature sensor (%s)", zc.Name, name, zoneSensorWords())
			}
			s.zone = z
		}
		for _, name := range zc.Heaters {
			p, ok := bl.pinOf[name]
			if !ok || bl.devs[name].Model != manifests.ModelGPIOOut {
				return fmt.Errorf("sim: zone %s: heater %q is not a gpio_out device", zc.Name, name)
			}
			z.heaters = append(z.heaters, p)
			if !slices.Contains(w.heaters, p) {
				w.heaters = append(w.heaters, p)
			}
		}
		for _, name := range zc.Fans {
			sl, ok := w.slaveByName[name]
			if !ok || sl.profile != manifests.ProfileVFD {
				return fmt.Errorf("sim: zone %s: fan %q is not a modbus device with profile vfd", zc.Name, name)
			}
			z.fans = append(z.fans, sl)
		}
		for _, name := range zc.Vents {
			p, ok := bl.pinOf[name]
			if !ok || bl.devs[name].Model != manifests.ModelGPIOOut {
				return fmt.Errorf("sim: zone %s: vent %q is not a gpio_out device", zc.Name, name)
			}
			z.vents = append(z.vents, p)
		}
		w.zones = append(w.zones, z)
	}
	return nil
}

// Clock returns the world's clock.
func (w *World) Clock() clock.Clock { return w.clk }

// I2C opens the simulated I²C bus that the manifest calls name (the Bus's
// Name, not its Device). Each call returns a new handle on the same bus; the
// caller closes it. An unknown name yields an error wrapping
// drivers.ErrUnavailable.
func (w *World) I2C(ctx context.Context, name string) (pi2c.BusCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sim i2c bus %q: %w", name, err)
	}
	b, ok := w.buses[name]
	if !ok {
		return nil, fmt.Errorf("sim i2c bus %q: %w: no such i2c bus in the manifest", name, drivers.ErrUnavailable)
	}
	return &I2CBus{w: w, b: b}, nil
}

// Pin returns the simulated GPIO pin the manifest calls name ("GPIO17", a
// Device's Pin). Pins are shared: every call returns a handle on the same
// line. An unknown pin yields an error wrapping drivers.ErrUnavailable.
func (w *World) Pin(ctx context.Context, name string) (pgpio.PinIO, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sim gpio pin %q: %w", name, err)
	}
	if pp := w.pulsePin(name); pp != nil {
		return pp, nil
	}
	p, ok := w.pins[name]
	if !ok {
		return nil, fmt.Errorf("sim gpio pin %q: %w: no device uses this pin in the manifest", name, drivers.ErrUnavailable)
	}
	return &Pin{w: w, p: p}, nil
}

// Zone returns the current state of the zone called name, advanced to the
// clock's now, and whether the zone exists.
func (w *World) Zone(name string) (ZoneState, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advanceLocked()
	for _, z := range w.zones {
		if z.cfg.Name == name {
			return ZoneState{Temperature: z.t, Humidity: z.humidity()}, true
		}
	}
	return ZoneState{}, false
}

// Transactions returns the number of I²C transactions attempted on the bus
// the manifest calls bus, through any handle, NACKed ones included; 0 for an
// unknown bus.
func (w *World) Transactions(bus string) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if b, ok := w.buses[bus]; ok {
		return b.tx
	}
	return 0
}

// Drive sets the logical level of the pin called name from outside, as a
// door closing on a switch would (active_low applied). It fails for an
// unknown pin.
func (w *World) Drive(name string, on bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pins[name]
	if !ok {
		return fmt.Errorf("sim gpio pin %q: %w: no device uses this pin in the manifest", name, drivers.ErrUnavailable)
	}
	w.advanceLocked()
	p.level = pgpio.Level(on != p.activeLow)
	return nil
}

// advanceLocked integrates every zone up to the clock's now. w.mu is held.
func (w *World) advanceLocked() time.Time {
	now := w.clk.Now()
	for _, s := range w.slaves {
		if s.profile == manifests.ProfileVFD {
			s.advance(now) // fans first: zones and meters depend on their speed
		}
	}
	for _, s := range w.slaves {
		if s.profile != manifests.ProfileVFD {
			s.advance(now)
		}
	}
	for _, z := range w.zones {
		z.advance(now)
	}
	return now
}

// sitePowerLocked is the simulated site's electrical load, W: a base load,
// every fan, every heater that is on. w.mu is held.
func (w *World) sitePowerLocked() float64 {
	p := MeterBaseLoad
	for _, s := range w.slaves {
		if s.profile == manifests.ProfileVFD {
			p += s.fanPower()
		}
	}
	for _, h := range w.heaters {
		if h.on() {
			p += HeaterPower
		}
	}
	return p
}

// zoneSensorWords names the models a zone's sensor may be.
func zoneSensorWords() string {
	ws := make([]string, len(manifests.ZoneSensorModels))
	for i, m := range manifests.ZoneSensorModels {
		ws[i] = string(m)
	}
	return manifests.OneOf(ws, "none")
}
