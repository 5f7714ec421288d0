package manifests

import (
	"time"

	"github.com/promcp/promcp-device/drivers/i2c/i2cconf"
)

// Manifest is a validated device manifest: the buses of one gateway, the
// devices on them, and the capabilities bound to those devices. A Manifest
// returned by Load or Parse has passed every check; code downstream may rely
// on every reference resolving and every enum holding a known value.
type Manifest struct {
	// File is the path the manifest was read from ("" when parsed from bytes
	// without a name).
	File string
	// Version is the format version; only 1 exists.
	Version int
	// Gateway names this gateway. It prefixes every capability's source
	// ("greenhouse-1/zone1_climate") so that fleets can namespace tools.
	Gateway     string
	Description string
	// Policy is the policy file the manifest names (top-level policy:),
	// relative to the manifest's directory; PolicyNone when the manifest
	// says it has none, "" when it does not say. See PolicyFile.
	Policy string

	Buses        []Bus
	Devices      []Device
	Capabilities []Capability
	// Groups are the tool groups, each served as its own MCP endpoint
	// (/mcp/<name> over HTTP, serve --group NAME over stdio); nil when the
	// manifest declares none. See Group.
	Groups []Group
	// Sim describes the simulated world for `serve --sim`; nil when absent.
	Sim *Sim
	// Jobs are the long-running actions (start_*, read_status_*,
	// do_cancel_*); nil when the manifest declares none. See Job.
	Jobs []Job

	// physmcp is what a PhysMCP manifest leaves for its policy; nil for a
	// manifest in this format.
	physmcp *physmcpInfo
}

// BusKind is the kind of a physical bus.
type BusKind string

// Bus kinds known to this version.
const (
	BusI2C  BusKind = "i2c"
	BusGPIO BusKind = "gpio"
)

// Bus is one physical line that devices share.
type Bus struct {
	// Name is the manifest's lower_snake_case name for the bus.
	Name string
	Kind BusKind
	// Device is the host's name for the bus: for I2C a periph bus name or
	// number ("1", "/dev/i2c-1", "I2C1"); "" opens the first bus found.
	// Unused for GPIO (pins are named per device).
	Device string
	// Timeout bounds one transaction on this bus. Zero means the default
	// (DefaultTimeout).
	Timeout time.Duration
	// Address is the host:port of a modbus_tcp or modbus_rtu_tcp bus.
	Address string
	// Serial holds the port settings of a modbus_rtu or serial bus.
	Serial SerialSettings
	// Retries is how often a failed transaction is retried on a Modbus or
	// serial bus (with back-off); Load fills DefaultRetries when absent.
	Retries int
	// Speed is the clock of an spi bus in Hz; Load fills DefaultSPISpeed.
	Speed int
	// MQTT is the broker connection of an mqtt bus; nil on other kinds.
	MQTT *MQTTBus
}

// DefaultTimeout is the per-transaction timeout of a bus that declares none.
const DefaultTimeout = 100 * time.Millisecond

// Model is what kind of device sits at an address or pin.
type Model string

// Device is one chip or pin on a bus.
type Device struct {
	Name  string
	Bus   string // name of a Bus in the same manifest
	Model Model
	// Address is the 7-bit I2C address (I2C models only).
	Address uint16
	// Pin is the host's pin name, such as "GPIO17" (GPIO models only).
	Pin string
	// ActiveLow inverts the pin: logical true drives the line low (relay
	// boards are often active low). GPIO models only.
	ActiveLow bool
	// Pull is the input's pull resistor (gpio_in only).
	Pull Pull
	// Registers is the register map (registers model only).
	Registers []Register
	// UnitID is the Modbus unit (slave) id (modbus model only).
	UnitID uint8
	// MaxSpan is the most registers (or bits) read in one transaction when
	// adjacent registers of this device are batched; 0 or 1 reads each
	// register on its own (modbus model only).
	MaxSpan int
	// Timeout bounds one transaction with this device (modbus and
	// serial_line only); zero means the bus's timeout. A slow device gets
	// its own without slowing the detection of a dead one elsewhere.
	Timeout time.Duration
	// ModbusRegisters is the register map of a modbus device: its own
	// registers, then those of its Profile that none of them replaces.
	ModbusRegisters []ModbusRegister
	// Profile is the modbus device's profile (a register map it takes
	// instead of declaring one, see DeviceProfile); "" for none.
	Profile DeviceProfile
	// Line is the request and response of a serial_line device.
	Line LineInstrument
	// MQTT holds the topics of an mqtt device; nil on other models.
	MQTT *MQTTDevice
	// Sim holds simulator-only settings for this device; nil when absent.
	Sim *DeviceSim
	// ROM is a ds18b20's w1 id ("28-0316a2795aff").
	ROM string
	// Channel is a pwm device's channel on its chip.
	Channel int
	// Frequency is a pwm device's initial frequency in Hz; Load fills
	// DefaultPWMFrequency.
	Frequency float64
	// VRef is an mcp3008's reference voltage; Load fills DefaultVRef.
	VRef float64
	// Edge is the edge a pulse_counter counts (EdgeFalling, EdgeRising or
	// EdgeBoth); Load fills EdgeFalling.
	Edge string
	// Debounce drops a pulse_counter's edges that follow a counted one
	// within it; Load fills DefaultDebounce.
	Debounce time.Duration
	// PerPulse is what one pulse stands for, in the capability's unit;
	// Load fills 1.
	PerPulse float64
	// Inputs are the named, scaled channels of an ads1015, ads1115 or
	// mcp3008.
	Inputs []ADCInput
	// Pins are the channels of an mcp23017 or pcf8574.
	Pins []ExpanderPin
	// ShuntOhms and MaxCurrent calibrate an ina219 (Load fills the
	// defaults, 0.1 Ω and 3.2 A).
	ShuntOhms, MaxCurrent float64
	// IIODevice is the IIO device a dht22 is read through, such as
	// "iio:device0" (dht22 only).
	IIODevice string
}

// Pull is a GPIO input's pull resistor.
type Pull string

// Pull values. The empty Pull leaves the pin as it is.
const (
	PullNone Pull = "none"
	PullUp   Pull = "up"
	PullDown Pull = "down"
)

// The register map of the registers model is the i2c driver's own
// configuration (package i2cconf, which imports no hardware module, and
// whose constants such as i2cconf.RegUint16 are the manifest's words). Load
// fills a Register's ByteOrder (big) and Scale (1), so they are never empty
// or zero after Load.
type (
	// RegType is the encoding of a register's value.
	RegType = i2cconf.RegType
	// ByteOrder is the order of a multi-byte register's bytes on the wire.
	ByteOrder = i2cconf.ByteOrder
	// Register is one named value in a register-map device. The
	// engineering value is raw*Scale + Offset.
	Register = i2cconf.Register
)

// ValueType is the JSON type of a capability's value.
type ValueType string

// Value types.
const (
	TypeNumber  ValueType = "number"
	TypeInteger ValueType = "integer"
	TypeBoolean ValueType = "boolean"
	TypeEnum    ValueType = "enum" // a string from Constraints.Enum
)

// Capability is one observable quantity, optionally with an action.
// Its read tool is "read_" + Name; its do tool, if any, is Do.Tool.
type Capability struct {
	// Name is lower_snake_case and unique in the manifest.
	Name        string
	Description string
	Type        ValueType
	// Unit is the unit of the value ("°C", "%"); required for number and
	// integer, empty for boolean and enum.
	Unit string
	// TTL is how long a reading stays fresh. Zero means DefaultTTL.
	TTL time.Duration
	// Location places the capability ("zone1"); matched by can_do.
	Location string
	// Tags are semantic words matched by can_do ("temperature", "heating").
	Tags []string
	// Read binds the observation to a device channel.
	Read Binding
	// Do is the action, or nil for a read-only capability.
	Do *Action
	// Health tunes how the capability's quality is derived from its
	// source's behaviour; the zero value applies the defaults.
	Health Health
	// Observe tunes the updates of a subscription to the capability's
	// resource; the zero value applies the defaults.
	Observe Observe
	// History tunes the recent samples the capability keeps; the zero
	// value applies the defaults.
	History History
}

// Health tunes the quality of a capability's readings (see the
// capabilities package for the rules and their precedence). Every field's
// zero value is "off" or the documented default.
type Health struct {
	// Plausible is the range outside which a value is not a reading of the
	// quantity (in the capability's unit): a value outside it is degraded.
	// Nil means no range check. Number and integer capabilities only.
	Plausible *Range
	// MaxRate is the largest believable change per second, in the
	// capability's unit (for a boolean: changes of level per second). Zero
	// means no check.
	MaxRate float64
	// StuckSamples is how many consecutive transactions may return a
	// bit-identical value before the value is called stuck. Zero means
	// DefaultStuckSamples when StuckFor is set, and no stuck check
	// otherwise. Only meaningful on a noisy quantity.
	StuckSamples int
	// StuckFor is how long a value may stay bit-identical before it is
	// called stuck (together with StuckSamples). Zero means no duration.
	StuckFor time.Duration
	// OnDeviceError is the quality of a read the device answers with an
	// error flag (an I2C NACK; a Modbus exception). Empty means error.
	OnDeviceError OnDeviceError
	// MaxStale is how long after its sample time the last good value may be
	// served as stale when fresh reads fail; after that the read is error.
	// Zero means DefaultMaxStale.
	MaxStale time.Duration
}

// Range is a closed interval in a capability's unit.
type Range struct {
	Min, Max float64
}

// OnDeviceError says what a device-level error flag makes of a read.
type OnDeviceError string

// Values of OnDeviceError.
const (
	// DeviceErrorIsError: the read is error (no value served).
	DeviceErrorIsError OnDeviceError = "error"
	// DeviceErrorIsDegraded: the last good value is served, degraded, for
	// up to MaxStale after its sample time.
	DeviceErrorIsDegraded OnDeviceError = "degraded"
)

// Health defaults.
const (
	// DefaultMaxStale is how long a last good value is served as stale.
	DefaultMaxStale = 30 * time.Second
	// DefaultStuckSamples is the sample count of a stuck check that gives
	// only a duration.
	DefaultStuckSamples = 3
)

// DefaultTTL is the freshness of a capability that declares no TTL.
const DefaultTTL = 5 * time.Second

// Binding names a device and one of its channels (see the Model constants
// for each model's channels).
type Binding struct {
	Device  string
	Channel string
}

// Action is the do_* side of a capability. It writes to the same binding
// as Read, so readback and previous_value come from the same channel.
type Action struct {
	// Tool is the tool name, "do_" + lower_snake_case, unique in the manifest.
	Tool        string
	Description string
	// SideEffects are declared to agents before and after execution.
	SideEffects []string
	// Compensable says whether the action can be reversed by another call
	// of the same tool with the previous value.
	Compensable bool
	// Settle is how long the device takes to apply a write: do_* waits this
	// long before reading the value back. Zero reads back at once; at most
	// MaxSettle.
	Settle      time.Duration
	Constraints Constraints
	// DependsOn names the capabilities whose readings the action's safety
	// depends on (a heater depends on the temperatures it warms). can_do
	// and do_* refuse the action while one of them has no reliable value,
	// and do not report it plainly allowed while one is not good.
	DependsOn []string
	// SafeValue is the value that puts the actuator in its safe state
	// (heater off: false; pump stopped; fan 0), or nil for none. It must
	// fit the capability's type and constraints. Moving to it is never
	// refused by a cooldown, rate limit, time window or approval, only by
	// an interlock whose when selects it.
	SafeValue any
}

// MaxSettle bounds Action.Settle: a do_* call blocks for the settle time.
const MaxSettle = 10 * time.Second

// Constraints bound an action's value. Nil pointers are unbounded.
type Constraints struct {
	Min  *float64
	Max  *float64
	Step *float64
	// Enum lists the allowed values of an enum capability.
	Enum []string
}

// Sim is the simulated world: zones with simple thermal physics.
type Sim struct {
	// Seed makes noise repeatable; 0 means 1.
	Seed int64
	// TimeScale multiplies the passage of time in `serve --sim` (60 makes a
	// simulated minute pass every real second). Zero means 1.
	TimeScale float64
	Zones     []Zone
}

// Zone is a volume of air with a temperature and a humidity.
type Zone struct {
	Name string
	// Temperature is the initial air temperature, °C.
	Temperature float64
	// Humidity is the initial relative humidity, %.
	Humidity float64
	// Outside is the outside air temperature, °C.
	Outside float64
	// LeakTimeConstant is how fast the zone drifts toward Outside with the
	// vents closed (Newton cooling). Zero means 2h.
	LeakTimeConstant time.Duration
	// VentTimeConstant is the drift toward Outside added by each open vent.
	// Zero means 10m.
	VentTimeConstant time.Duration
	// HeaterRate is the warming of each heater that is on, °C per minute.
	// Zero means 0.5.
	HeaterRate float64
	// Noise is the standard deviation of sensor noise on temperature, °C
	// (humidity gets ten times that, in %). Zero means none.
	Noise float64
	// Sensors are the devices that measure this zone, of the models in
	// ZoneSensorModels (docs/manifest-reference.md lists them).
	Sensors []string
	// Heaters are gpio_out devices that warm this zone while on.
	Heaters []string
	// Vents are gpio_out devices that open a vent to the outside while on.
	Vents []string
	// Fans are modbus devices with sim profile vfd whose fan cools this zone
	// in proportion to its speed.
	Fans []string
	// FanTimeConstant is the drift toward Outside added by a fan at full
	// speed. Zero means 5m.
	FanTimeConstant time.Duration
}

// DeviceSim holds a device's simulator settings.
type DeviceSim struct {
	// Values are initial engineering values of a register-map device's
	// registers, by register name.
	Values map[string]float64
	// Level is the initial logical level of a GPIO pin.
	Level bool
	// Profile gives a modbus device behaviour: "vfd" (speed follows
	// speed_setpoint along a ramp) or "energy_meter" (power and energy of
	// the simulated site); "" is a plain register bank.
	Profile SimProfile
	// Response is the line a simulated serial_line instrument answers its
	// request with (terminator added); it must match the device's response
	// pattern.
	Response string
}

// SimProfile is the behaviour of a simulated modbus device.
type SimProfile string

// Simulator profiles.
const (
	ProfileVFD         SimProfile = "vfd"
	ProfileEnergyMeter SimProfile = "energy_meter"
)
