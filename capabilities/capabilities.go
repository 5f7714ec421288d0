package capabilities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sync"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"
	pi2c "periph.io/x/conn/v3/i2c"
	pspi "periph.io/x/conn/v3/spi"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/sysfs"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/promcp"
)

// ErrOutOfRange is returned by Write for a value outside the capability's
// type or constraints; nothing is written.
var ErrOutOfRange = errors.New("value outside the declared constraints")

// Hardware opens buses and pins. The host and the simulator implement it.
type Hardware interface {
	// OpenI2C opens the I2C bus the manifest declares. The caller closes it.
	OpenI2C(ctx context.Context, bus manifests.Bus) (pi2c.BusCloser, error)
	// OpenPin returns the pin of a GPIO device.
	OpenPin(ctx context.Context, dev manifests.Device) (pgpio.PinIO, error)
	// DialTCP connects to the address of a modbus_tcp or modbus_rtu_tcp
	// bus. It is called again to reconnect after the peer drops.
	DialTCP(ctx context.Context, bus manifests.Bus) (net.Conn, error)
	// OpenSerial opens the port of a modbus_rtu or serial bus with its
	// settings. The caller closes it.
	OpenSerial(ctx context.Context, bus manifests.Bus) (modbus.Port, error)
}

// HardwareFuncs adapts functions to Hardware. A nil function fails with
// drivers.ErrUnavailable.
type HardwareFuncs struct {
	I2C    func(ctx context.Context, bus manifests.Bus) (pi2c.BusCloser, error)
	Pin    func(ctx context.Context, dev manifests.Device) (pgpio.PinIO, error)
	TCP    func(ctx context.Context, bus manifests.Bus) (net.Conn, error)
	Serial func(ctx context.Context, bus manifests.Bus) (modbus.Port, error)
	// Sysfs returns the kernel attribute files of a onewire or pwm bus.
	Sysfs func(ctx context.Context, bus manifests.Bus) (sysfs.FS, error)
	// SPI opens the port of an spi bus. The caller closes it.
	SPI func(ctx context.Context, bus manifests.Bus) (pspi.PortCloser, error)
}

// DialTCP implements Hardware.
func (h HardwareFuncs) DialTCP(ctx context.Context, bus manifests.Bus) (net.Conn, error) {
	if h.TCP == nil {
		return nil, fmt.Errorf("bus %s: %w: no TCP dialer", bus.Name, drivers.ErrUnavailable)
	}
	return h.TCP(ctx, bus)
}

// OpenSerial implements Hardware.
func (h HardwareFuncs) OpenSerial(ctx context.Context, bus manifests.Bus) (modbus.Port, error) {
	if h.Serial == nil {
		return nil, fmt.Errorf("bus %s: %w: no serial ports", bus.Name, drivers.ErrUnavailable)
	}
	return h.Serial(ctx, bus)
}

// OpenI2C implements Hardware.
func (h HardwareFuncs) OpenI2C(ctx context.Context, bus manifests.Bus) (pi2c.BusCloser, error) {
	return h.I2C(ctx, bus)
}

// OpenPin implements Hardware.
func (h HardwareFuncs) OpenPin(ctx context.Context, dev manifests.Device) (pgpio.PinIO, error) {
	return h.Pin(ctx, dev)
}

// Options are the optional knobs of Open.
type Options struct {
	// Clock stamps readings; nil means the system clock. The simulator
	// passes its own clock so sample times follow simulated time.
	Clock clock.Clock
	// Log receives lifecycle and per-transaction logs; nil discards them.
	Log *slog.Logger
	// StateDir keeps what a model must remember across restarts (a pulse
	// counter's total); "" keeps it in memory.
	StateDir string
	// Observer is told of every read, for metrics; nil tells no one.
	Observer ReadObserver
}

// ReadObserver is told of every read of a capability: the reading (its
// quality, whether it came from the cache, its error) and how long the
// read took, in real time. It must be quick and safe for concurrent use.
type ReadObserver interface {
	ObserveRead(capability string, r Reading, d time.Duration)
}

// Reading is one observation of a capability.
type Reading struct {
	// Value is float64 (number), int64 (integer), bool or string; nil when
	// the quality is error. A stale or degraded reading after a failed read
	// carries the last good value.
	Value any
	// Time is when Value was sampled, never when it was served: a cached
	// or stale value keeps its own sample time. For an error without a
	// value, when the read was attempted.
	Time    time.Time
	Quality promcp.Quality
	// Reason explains a quality that is not good, briefly and in a form a
	// program can match: "stuck: unchanged for 60 s (12 samples)".
	Reason string
	// Err is the driver's error when the latest read of the source failed.
	Err error
	// Grounds is what Value rests on: the bytes the device sent and the
	// transaction that read them. Zero when there is no sample.
	Grounds Grounds
}

// Grounds is the evidence of one sample: what the device sent, before the
// conversion its Binding names, and the transaction that read it. It is
// carried by value: a read served from the cache adds no allocation.
type Grounds struct {
	// Raw is the bytes as the device sent them for this value (the
	// register's bytes; a Modbus value's registers, big endian as on the
	// wire; an SHT3x measurement with its CRC bytes; a pin's level as 0 or
	// 1); nil when the model has no raw form or there is no sample. It is
	// shared: do not change it.
	Raw []byte
	// Latency is how long the transaction took, in real time.
	Latency time.Duration
	// Cached is true when the sample was served from the cache (younger
	// than the caller's maximum age) rather than read by this call.
	Cached bool
}

// Binding says where a capability's value comes from and how it is
// converted: the static part of its grounds, fixed when it is opened.
type Binding struct {
	// Driver is the driver package that reads it: i2c, modbus, gpio, serial.
	Driver string
	// Device, Bus and Address name the device (manifest names; the address
	// as the bus knows it: "0x44", "unit 1", "pin GPIO17").
	Device, Bus, Address string
	// Register is the register, channel or named value read.
	Register string
	// RawForm says what Grounds.Raw holds.
	RawForm string
	// Conversion is how the raw form becomes the value, in words and
	// numbers: "int16 big-endian × 0.1 + 0", "SHT3x: -45 + 175 × raw/65535 °C".
	Conversion string
}

// Capability is a manifest capability bound to its device.
type Capability struct {
	manifests.Capability
	// Source names where the value comes from: "gateway/device".
	Source string
	// Model is the model of the bound device.
	Model manifests.Model
	// Binding is where the value comes from and how it is converted.
	Binding Binding

	clock  clock.Clock
	log    *slog.Logger
	src    *sampler      // shared by the capabilities of one measurement
	pick   func(any) any // the capability's value in the source's sample
	health *tracker
	write  func(ctx context.Context, v any) error

	mu          sync.Mutex
	latency     time.Duration  // smoothed latency of bus operations
	lastQuality promcp.Quality // for logging changes

	obs ReadObserver // Options.Observer
}

// ReadTool returns the name of the capability's read tool.
func (c *Capability) ReadTool() string { return "read_" + c.Name }

// TTL returns the capability's freshness, with the default applied.
func (c *Capability) TTL() time.Duration {
	if c.Capability.TTL > 0 {
		return c.Capability.TTL
	}
	return manifests.DefaultTTL
}

// Writable reports whether the capability has an action.
func (c *Capability) Writable() bool { return c.Do != nil && c.write != nil }

// Read is ReadWithin(ctx, c.TTL()): a sample younger than the TTL may come
// from the cache.
func (c *Capability) Read(ctx context.Context) Reading {
	return c.ReadWithin(ctx, c.TTL())
}

// ReadWithin observes the capability, accepting a sample younger than
// maxAge (capped at the TTL; 0 forces a new transaction) from the cache.
// Concurrent callers share one transaction. A failed read is a Reading
// with quality stale, degraded or error and Err set, not an error: the
// caller always has a typed answer to give. The quality follows the rules
// in the package documentation.
func (c *Capability) ReadWithin(ctx context.Context, maxAge time.Duration) Reading {
	if c.obs == nil {
		return c.readWithin(ctx, maxAge)
	}
	start := time.Now()
	r := c.readWithin(ctx, maxAge)
	c.obs.ObserveRead(c.Name, r, time.Since(start))
	return r
}

func (c *Capability) readWithin(ctx context.Context, maxAge time.Duration) Reading {
	maxAge = min(max(maxAge, 0), c.TTL())
	a, cached, err := c.src.get(ctx, maxAge)
	if err != nil {
		return Reading{Time: c.clock.Now(), Quality: promcp.QualityError,
			Reason: "read abandoned (" + errorClass(drivers.Classify(err)) + ")", Err: err}
	}
	var v any
	if a.err == nil {
		v = c.pick(a.value)
	}
	if c.health.observe(a, v) {
		c.observe(a.latency)
	}
	r := c.health.reading(a, v, c.clock.Now())
	if a.err == nil {
		r.Grounds = Grounds{Raw: a.raw, Latency: a.latency, Cached: cached}
	}
	c.logQuality(r)
	return r
}

// Health returns what the capability's tracker has measured so far.
func (c *Capability) Health() Health { return c.health.snapshot(c.clock.Now()) }

func (c *Capability) logQuality(r Reading) {
	c.mu.Lock()
	changed := r.Quality != c.lastQuality
	first := c.lastQuality == ""
	c.lastQuality = r.Quality
	c.mu.Unlock()
	switch {
	case !changed:
	case first && r.Quality == promcp.QualityGood:
		// The first reading of each capability: not news at INFO.
		c.log.Debug("first reading good")
	case r.Quality == promcp.QualityGood:
		c.log.Info("quality good again")
	default:
		c.log.Warn("quality "+string(r.Quality)+": "+r.Reason, "err", r.Err)
	}
}

// Write applies v (float64, bool or string, as the type says) to the
// device. The caller has checked v against the constraints.
func (c *Capability) Write(ctx context.Context, v any) error {
	if !c.Writable() {
		return fmt.Errorf("capability %s has no action", c.Name)
	}
	if reason := policy.CheckValue(c.Type, c.Do.Constraints, c.Unit, v); reason != "" {
		return fmt.Errorf("capability %s: %w: %s", c.Name, ErrOutOfRange, reason)
	}
	start := time.Now()
	err := c.write(ctx, v)
	c.observe(time.Since(start))
	// Whatever happened, the device may hold another value now: the next
	// read (a readback) must not come from before the write.
	c.src.invalidate()
	if err != nil {
		return fmt.Errorf("capability %s: %w", c.Name, err)
	}
	return nil
}

// Latency returns the smoothed duration of the capability's bus operations,
// or 0 before the first one.
func (c *Capability) Latency() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.latency
}

func (c *Capability) observe(d time.Duration) {
	c.mu.Lock()
	if c.latency == 0 {
		c.latency = d
	} else {
		c.latency = (c.latency*7 + d) / 8
	}
	c.mu.Unlock()
}

// Set is the manifest's capabilities bound to open devices.
type Set struct {
	Gateway string
	caps    []*Capability
	byName  map[string]*Capability
	closers []func() error
}

// All returns the capabilities in manifest order.
func (s *Set) All() []*Capability { return s.caps }

// Get returns the capability named name.
func (s *Set) Get(name string) (*Capability, bool) {
	c, ok := s.byName[name]
	return c, ok
}

// Close releases the buses Open opened.
func (s *Set) Close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	s.closers = nil
	return errors.Join(errs...)
}

// Open opens every bus and device of m through hw and binds the
// capabilities. m must have passed manifests validation. On error, whatever
// was opened is closed again.
func Open(ctx context.Context, m *manifests.Manifest, hw Hardware, opts Options) (_ *Set, err error) {
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Set{Gateway: m.Gateway, byName: map[string]*Capability{}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()

	buses := map[string]*i2c.Bus{}
	busByName := map[string]manifests.Bus{}
	for _, b := range m.Buses {
		busByName[b.Name] = b
		if b.Kind != manifests.BusI2C {
			continue
		}
		bc, err := hw.OpenI2C(ctx, b)
		if err != nil {
			return nil, fmt.Errorf("bus %s: %w", b.Name, err)
		}
		s.closers = append(s.closers, bc.Close)
		timeout := b.Timeout
		if timeout <= 0 {
			timeout = manifests.DefaultTimeout
		}
		buses[b.Name] = i2c.NewBus(b.Name, bc, timeout, opts.Log)
	}

	lines, err := openLines(ctx, m, hw, opts.Log, s)
	if err != nil {
		return nil, err
	}
	brokers, err := openBrokers(m, hw, opts, s)
	if err != nil {
		return nil, err
	}
	channels := map[string]*device{}
	deviceBus := map[string]string{}
	table := models()
	e := env{buses: buses, lines: lines, hw: hw, clock: opts.Clock, log: opts.Log}
	e.declared = busByName
	e.stateDir = opts.StateDir
	e.closers = func(f func() error) { s.closers = append(s.closers, f) }
	e.brokers = brokers
	for _, d := range m.Devices {
		dev, err := openDevice(ctx, table, d, e)
		if err != nil {
			return nil, fmt.Errorf("device %s: %w", d.Name, err)
		}
		channels[d.Name] = dev
		deviceBus[d.Name] = d.Bus
	}

	for _, mc := range m.Capabilities {
		dev, ok := channels[mc.Read.Device]
		if !ok {
			return nil, fmt.Errorf("capability %s: device %q is not declared", mc.Name, mc.Read.Device)
		}
		c := &Capability{
			Capability: mc,
			Source:     m.Gateway + "/" + dev.origin + mc.Read.Device,
			Model:      dev.model,
			clock:      opts.Clock,
			log:        opts.Log.With("capability", mc.Name),
		}
		c.obs = opts.Observer
		hc := mc.Health
		if hc.OnDeviceError == "" {
			hc.OnDeviceError = dev.onDeviceError
		}
		c.health = newTracker(hc, c.TTL(), mc.Unit)
		c.src, c.pick, err = dev.source(mc.Read.Channel, mc.Type)
		if err != nil {
			return nil, fmt.Errorf("capability %s: %w", mc.Name, err)
		}
		c.Binding = dev.bind(mc.Read.Channel)
		c.Binding.Device, c.Binding.Bus = mc.Read.Device, deviceBus[mc.Read.Device]
		if mc.Do != nil {
			c.write, err = dev.writer(mc.Read.Channel, mc.Type)
			if err != nil {
				return nil, fmt.Errorf("capability %s: %w", mc.Name, err)
			}
		}
		s.caps = append(s.caps, c)
		s.byName[mc.Name] = c
	}
	return s, nil
}

// device is an opened device that hands out per-channel functions.
type device struct {
	model manifests.Model
	// source returns the sampler that reads channel and the function that
	// picks the channel's value (of type t) from its samples. Channels of
	// one measurement share a sampler.
	source func(channel string, t manifests.ValueType) (*sampler, func(any) any, error)
	writer func(channel string, t manifests.ValueType) (func(context.Context, any) error, error)
	// bind says how channel is read and converted (Device and Bus are
	// filled by Open).
	bind func(channel string) Binding
	// origin prefixes the device's name in its capabilities' Source
	// ("mqtt:zigbee2mqtt/" for a Lite device adopted over MQTT); "" for a
	// device this gateway drives itself.
	origin string
	// onDeviceError is the model's default for health.on_device_error
	// when the manifest leaves it out ("" means the framework's, error).
	onDeviceError manifests.OnDeviceError
}

func identity(v any) any { return v }

// perChannel gives each channel its own sampler over read.
func perChannel(clk clock.Clock, read func(channel string, t manifests.ValueType) readFunc) func(string, manifests.ValueType) (*sampler, func(any) any, error) {
	return func(channel string, t manifests.ValueType) (*sampler, func(any) any, error) {
		return newSampler(clk, read(channel, t)), identity, nil
	}
}

func noWriter(model manifests.Model) func(string, manifests.ValueType) (func(context.Context, any) error, error) {
	return func(string, manifests.ValueType) (func(context.Context, any) error, error) {
		return nil, fmt.Errorf("model %s is read-only", model)
	}
}

// env is what a model's opener may use: the open I2C buses and serial or
// TCP lines, the hardware for pins, the clock and the device's logger.
type env struct {
	buses map[string]*i2c.Bus
	lines *lineSet
	hw    Hardware
	clock clock.Clock
	log   *slog.Logger
	// declared is every bus of the manifest, by name.
	declared map[string]manifests.Bus
	// closers registers what the Set closes when it closes.
	closers func(func() error)
	// stateDir is Options.StateDir.
	stateDir string
	// brokers are the open mqtt buses by name.
	brokers map[string]*broker
}

// opener opens one device of its model.
type opener func(ctx context.Context, d manifests.Device, e env) (*device, error)

// models is the table of device models: each has its own file with its
// opener (and its channels); adding a model is adding that file and a row
// here. The simulator keeps the same table for its counterparts (sim's
// models).
func models() map[manifests.Model]opener {
	return map[manifests.Model]opener{
		manifests.ModelSHT3x:      openSHT3x,
		manifests.ModelRegisters:  openRegisters,
		manifests.ModelGPIOOut:    openGPIOOut,
		manifests.ModelGPIOIn:     openGPIOIn,
		manifests.ModelModbus:     openModbus,
		manifests.ModelSerialLine: openSerialLine,
		manifests.ModelMQTT:       openMQTT,
		manifests.ModelBME280:     openBME280,
		manifests.ModelBMP280:     openBME280,
		manifests.ModelADS1115:    openADS1x15,
		manifests.ModelADS1015:    openADS1x15,
		manifests.ModelINA219:     openINA219,
		manifests.ModelMCP23017:   openMCP23017,
		manifests.ModelPCF8574:    openPCF8574,

		// 1-Wire, PWM and SPI through the kernel; pulses on a GPIO edge.
		manifests.ModelDS18B20:      openDS18B20,
		manifests.ModelPWM:          openPWM,
		manifests.ModelMCP3008:      openMCP3008,
		manifests.ModelPulseCounter: openPulseCounter,
	}
}

// openDevice opens d with its model's opener.
func openDevice(ctx context.Context, table map[manifests.Model]opener, d manifests.Device, e env) (*device, error) {
	open, ok := table[d.Model]
	if !ok {
		return nil, fmt.Errorf("unknown model %q", d.Model)
	}
	e.log = e.log.With("device", d.Name)
	return open(ctx, d, e)
}

// numeric converts an engineering value to the capability's JSON type.
func numeric(f float64, t manifests.ValueType) any {
	if t == manifests.TypeInteger {
		return int64(math.Round(f))
	}
	return f
}

// levels are a pin's or a bit's raw form, shared so that reading one
// allocates nothing.
var levels = [2][]byte{{0}, {1}}

func level(on bool) []byte {
	if on {
		return levels[1]
	}
	return levels[0]
}

func round(f float64, digits int) float64 {
	p := math.Pow10(digits)
	return math.Round(f*p) / p
}
