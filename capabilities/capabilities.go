package capabilities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/promcp"
)

// ErrOutOfRange is returned by Write for a value outside the capability's
// type or constraints; nothing is written.
var ErrOutOfRange = errors.New("value outside the declared constraints")

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

// Writer is the one holder of a Set's actuator writes. Set.TakeWriter
// hands it out once: the gateway takes it when it serves the set and uses
// it in its one actuation path only (decide, reserve, record the attempt,
// write, read back, commit), so nothing else can write the set's
// actuators.
type Writer struct{ set *Set }

// ErrWriterTaken is returned by TakeWriter after the first call.
var ErrWriterTaken = errors.New("the capability set's writer is already taken (one gateway serves a set)")

// TakeWriter returns the set's Writer the first time it is called, and
// ErrWriterTaken after.
func (s *Set) TakeWriter() (*Writer, error) {
	if !s.writerTaken.CompareAndSwap(false, true) {
		return nil, ErrWriterTaken
	}
	return &Writer{set: s}, nil
}

// Write applies v (float64, bool or string, as the type says) to the
// device of c, a capability of the writer's set. The caller has checked v
// against the constraints.
func (w *Writer) Write(ctx context.Context, c *Capability, v any) error {
	if got, ok := w.set.Get(c.Name); !ok || got != c {
		return fmt.Errorf("capability %s is not one of this writer's set", c.Name)
	}
	return c.apply(ctx, v)
}

// apply applies v to the device (Writer.Write).
func (c *Capability) apply(ctx context.Context, v any) error {
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
	Gateway     string
	caps        []*Capability
	byName      map[string]*Capability
	closers     []func() error
	writerTaken atomic.Bool // TakeWriter
	// changes counts the changes of every cached sample of the set (see
	// Changes).
	changes atomic.Uint64
}

// Changes counts the changes of the set's cached samples: a transaction
// whose outcome is cached, a write that drops the cached sample. While it
// stays the same, every capability reads from the same samples as before
// (until they age out: Reading.Time plus the capability's TTL), so an
// answer computed from them may be given again (gateway: can_do).
func (s *Set) Changes() uint64 { return s.changes.Load() }

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
	e, err := s.openBuses(ctx, m, hw, opts)
	if err != nil {
		return nil, err
	}
	devices, err := openDevices(ctx, m, e)
	if err != nil {
		return nil, err
	}
	for _, mc := range m.Capabilities {
		c, err := bind(m.Gateway, mc, devices, opts)
		if err != nil {
			return nil, fmt.Errorf("capability %s: %w", mc.Name, err)
		}
		s.caps = append(s.caps, c)
		s.byName[mc.Name] = c
		c.src.changes = &s.changes // before any read: the set is not served yet
	}
	return s, nil
}

// openBuses opens every bus of m (I2C buses, then Modbus and serial lines,
// then MQTT brokers) for s to close, and returns them as the env of the
// models' openers.
func (s *Set) openBuses(ctx context.Context, m *manifests.Manifest, hw Hardware, opts Options) (env, error) {
	buses, err := openI2C(ctx, m, hw, opts.Log, s)
	if err != nil {
		return env{}, err
	}
	lines, err := openLines(ctx, m, hw, opts.Log, s)
	if err != nil {
		return env{}, err
	}
	brokers, err := openBrokers(m, hw, opts, s)
	if err != nil {
		return env{}, err
	}
	declared := map[string]manifests.Bus{}
	for _, b := range m.Buses {
		declared[b.Name] = b
	}
	return env{buses: buses, lines: lines, hw: hw, clock: opts.Clock, log: opts.Log,
		declared: declared, stateDir: opts.StateDir, brokers: brokers,
		closers: func(f func() error) { s.closers = append(s.closers, f) }}, nil
}

// openI2C opens every I2C bus of m, with the bus's timeout.
func openI2C(ctx context.Context, m *manifests.Manifest, hw Hardware, log *slog.Logger, s *Set) (map[string]*i2c.Bus, error) {
	buses := map[string]*i2c.Bus{}
	for _, b := range m.Buses {
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
		buses[b.Name] = i2c.NewBus(b.Name, bc, timeout, log)
	}
	return buses, nil
}

// openDevices opens every device of m with its model's opener, by name.
func openDevices(ctx context.Context, m *manifests.Manifest, e env) (map[string]*device, error) {
	devices := map[string]*device{}
	table := models()
	for _, d := range m.Devices {
		dev, err := openDevice(ctx, table, d, e)
		if err != nil {
			return nil, fmt.Errorf("device %s: %w", d.Name, err)
		}
		dev.bus = d.Bus
		devices[d.Name] = dev
	}
	return devices, nil
}

// bind binds the capability mc of gateway to its device, one of devices.
func bind(gateway string, mc manifests.Capability, devices map[string]*device, opts Options) (*Capability, error) {
	dev, ok := devices[mc.Read.Device]
	if !ok {
		return nil, fmt.Errorf("device %q is not declared", mc.Read.Device)
	}
	c := &Capability{
		Capability: mc,
		Source:     gateway + "/" + dev.origin + mc.Read.Device,
		Model:      dev.model,
		clock:      opts.Clock,
		log:        opts.Log.With("capability", mc.Name),
		obs:        opts.Observer,
	}
	hc := mc.Health
	if hc.OnDeviceError == "" {
		hc.OnDeviceError = dev.onDeviceError
	}
	if hc.Plausible == nil {
		hc.Plausible = manifests.DefaultPlausible(dev.model, mc.Read.Channel)
	}
	c.health = newTracker(hc, c.TTL(), mc.Unit)
	var err error
	c.src, c.pick, err = dev.source(mc.Read.Channel, channelType(mc, dev))
	if err != nil {
		return nil, err
	}
	if enumByIndex(mc, dev) {
		c.pick = enumNames(c.pick, mc.Do.Constraints.Enum)
	}
	c.Binding = dev.bind(mc.Read.Channel)
	c.Binding.Device, c.Binding.Bus = mc.Read.Device, dev.bus
	if mc.Do != nil {
		if c.write, err = dev.writer(mc.Read.Channel, channelType(mc, dev)); err != nil {
			return nil, err
		}
		if enumByIndex(mc, dev) {
			c.write = enumIndexes(c.write, mc.Do.Constraints.Enum)
		}
	}
	return c, nil
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

// enumByIndex reports whether mc is an enum kept on a Modbus register as
// the index of its value in do.constraints.enum (0 is the first).
func enumByIndex(mc manifests.Capability, dev *device) bool {
	return mc.Type == manifests.TypeEnum && dev.model == manifests.ModelModbus && mc.Do != nil
}

// channelType is the type the device's channel carries for mc: an integer
// for an enum kept by index.
func channelType(mc manifests.Capability, dev *device) manifests.ValueType {
	if enumByIndex(mc, dev) {
		return manifests.TypeInteger
	}
	return mc.Type
}

// enumNames turns the index a register holds into the enum's name; an
// index outside the enum stays a number, which the enum's constraints
// then do not admit.
func enumNames(pick func(any) any, names []string) func(any) any {
	return func(v any) any {
		v = pick(v)
		if i, ok := v.(int64); ok && i >= 0 && int(i) < len(names) {
			return names[i]
		}
		return v
	}
}

// enumIndexes writes an enum's name as its index.
func enumIndexes(write func(context.Context, any) error, names []string) func(context.Context, any) error {
	return func(ctx context.Context, v any) error {
		s, _ := v.(string)
		i := slices.Index(names, s)
		if i < 0 {
			return fmt.Errorf("%v is not one of the enum's values %v", v, names)
		}
		return write(ctx, int64(i))
	}
}
