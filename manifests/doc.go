// Package manifests defines the device manifest: the YAML file that tells a
// promcp-device gateway which buses it has, which devices sit on them, and
// which capabilities (read_* and do_* tools) those devices offer. [Load] and
// [Parse] read a manifest, check all of it, and return a [Manifest] that the
// rest of the program can trust: every reference resolves, every enum holds a
// known value, every device fits its bus.
//
// The reference generated from this package's tables and this
// documentation is docs/manifest-reference.md (go run ./cmd/promcp-device
// docs writes it, with the JSON Schemas of docs/schema); what each part
// serves is in docs/manifest.md. Complete examples live in
// manifests/examples: greenhouse.yml (SHT31 sensors, a heater relay, a vent
// motor, a fan VFD on Modbus RTU and an energy meter on Modbus TCP, with a
// simulated world), lab-bench.yml (a generic I2C register-map device, a
// door switch and a pump), pi-sensors.yml (the I2C chip models),
// irrigation.yml (1-Wire, PWM, SPI and a pulse counter on one Pi),
// mqtt-home.yml (Tasmota and Zigbee2MQTT devices on a broker) and
// pi-outdoor.yml.
//
// # Format
//
// A manifest is one YAML document holding a mapping. Keys are lower case
// snake_case; a key the format does not define is an error, so a typo never
// goes unnoticed. Durations are strings with a unit, as Go writes them:
// "250ms", "2s", "10m", "2h". Integers may be written in decimal (68) or hex
// (0x44). A key set to null (written with no value) counts as absent. YAML
// anchors, aliases and merge keys (<<: *anchor) may be used to share
// repeated parts.
//
// Names (of buses, devices, capabilities, registers and zones) are
// lower_snake_case: a lower case letter, then lower case letters and digits,
// with single underscores between words (zone1_climate, i2c1).
//
// Top level:
//
//	key           type               default   constraint
//	version       integer            required  1
//	gateway       string             required  lower case letters, digits, _ and -, starting with a letter ("greenhouse-1"); prefixes every capability's source
//	description   string             ""        free text
//	policy        string             ""        the policy file, relative to the manifest ("greenhouse.policy.yml"), or none; see Policy
//	buses         list of bus        none
//	devices       list of device     none
//	capabilities  list of capability none
//	groups        list of group      none      tool groups, each its own MCP endpoint; see Group
//	sim           sim                none      only used by serve --sim
//	jobs          list of job        none      long-running actions (start_*, read_status_*, do_cancel_*); see Job
//
// A bus (buses[]):
//
//	key        type      default   constraint
//	name       name      required  unique among buses
//	kind       string    required  i2c, gpio, modbus_tcp, modbus_rtu, modbus_rtu_tcp, serial, mqtt, onewire, pwm or spi (the models each carries: see the model table)
//	device     string    ""        i2c only: the host's bus, "1", "/dev/i2c-1" or "I2C1"; "" opens the first bus found
//	timeout    duration  100ms     more than 0; bounds one transaction on the bus, response included
//	address    string    -         modbus_tcp and modbus_rtu_tcp: required, host:port ("192.168.1.50:502")
//	port       string    -         modbus_rtu and serial: required, the host's serial device ("/dev/ttyUSB0"; see promcp-device ports)
//	baud       integer   9600      modbus_rtu and serial: 300..4000000
//	data_bits  integer   8         modbus_rtu and serial: 7 or 8
//	parity     string    none      modbus_rtu and serial: none, even or odd
//	stop_bits  integer   1         modbus_rtu and serial: 1 or 2
//	rs485      string    none      modbus_rtu and serial: RS-485 direction control; none (the adapter switches), kernel (TIOCSRS485) or rts (the driver toggles RTS)
//	frame_gap  duration  3.5 chars  modbus_rtu only: silence between frames; default 3.5 character times, 1.75ms above 19200 baud
//	retries    integer   2         Modbus and serial buses: 0..10 retries of a failed transaction, with back-off
//	speed      integer   1000000   spi only: the clock in Hz, 10000..10000000 (an mcp3008 caps it at 1350000)
//	mqtt       mqtt bus  -         mqtt: required, the broker connection (see MQTT); other kinds: not allowed
//
// Three more kinds reach devices through the kernel (a Raspberry Pi enables
// them in config.txt): onewire (dtoverlay=w1-gpio; device is the w1 sysfs
// directory, default /sys/bus/w1/devices), pwm (dtoverlay=pwm-2chan; device
// is the chip's directory, default /sys/class/pwm/pwmchip0) and spi
// (dtparam=spi=on; device is the spidev node, default /dev/spidev0.0, one
// chip per bus). They take no line keys (address, port, baud ... retries).
//
// On a Modbus or serial bus one transaction is on the line at a time, first
// come first served; a device whose calls keep failing is left alone for a
// while (5s, doubling to 1m) so that it does not starve the others.
//
// A device (devices[]):
//
//	key         type             default   constraint
//	name        name             required  unique among devices
//	bus         string           required  the name of a bus
//	model       string           required  a model the bus's kind carries (the model table below; docs/manifest-reference.md lists the kinds that carry each)
//	address     integer          -         i2c models: required, a 7-bit I2C address 0x03..0x77 (sht3x: 0x44 or 0x45), unique on its bus; gpio models: not allowed
//	pin         string           -         gpio models: required, the host's pin name such as "GPIO17", unique in the manifest (ignoring case); i2c models: not allowed
//	active_low  boolean          false     gpio models only: logical true drives the line low
//	pull        string           unchanged  gpio_in only: none, up or down
//	registers   list of registers  -       registers and modbus models: required, at least one (a modbus register has its own keys, below), unless a modbus device has a profile; other models: not allowed
//	profile     string           none      modbus only: eastron_sdm120, eastron_sdm630, relay_board_4, relay_board_8 or relay_board_16 fills the register map (see DeviceProfile); own registers replace the profile's of the same name or table and address
//	unit_id     integer          -         modbus: required, 1..247 on a serial line or RTU over TCP, 0..255 on Modbus TCP; unique on its bus
//	max_span    integer          0         modbus: read adjacent registers of one table in one transaction while the run stays within this many registers (bits for coil and discrete); 0 or 1 reads each alone; at most 125
//	timeout     duration         bus's     modbus and serial_line: more than 0; bounds one transaction with this device
//	request     string           -         serial_line: required, the text that asks for a reading (terminator added)
//	terminator  string           "\r\n"    serial_line: ends the request and the response line
//	response    string           -         serial_line: required, a regular expression with a named group per value ("T=(?P<temperature>[-0-9.]+)")
//	sim         device sim       none      simulator settings, see below
//	mqtt        mqtt device      -         mqtt: required, the device's topics (see MQTT); other models: not allowed
//	rom         string           -         ds18b20: required, its w1 id, "28-" and 12 lower-case hex digits ("28-0316a2795aff"), unique on its bus; other models: not allowed
//	channel     integer          -         pwm: required, the chip's channel 0..15 (pwm-2chan: 0 on GPIO18, 1 on GPIO19), unique on its bus; other models: not allowed
//	frequency   number           25000     pwm: Hz, 0.1..100000000, set at start-up when the channel has no period yet; other models: not allowed
//	vref        number           3.3       mcp3008: the reference voltage, 0.25..5.5 V; other models: not allowed
//	edge        string           falling   pulse_counter: falling, rising or both; other models: not allowed
//	debounce    duration         5ms       pulse_counter: at most 1s; an edge this soon after a counted one is contact bounce
//	per_pulse   number           1         pulse_counter: more than 0, what one pulse stands for in the capability's unit (litres, mm)
//	inputs      list of input    -         ads1015 and ads1115: required, at least one (below); mcp3008: optional, named scaled channels besides ch0..ch7 (below); other models: not allowed
//	pins        list of pin      -         mcp23017 and pcf8574: required, at least one (below); other models: not allowed
//	shunt_ohms  number           0.1       ina219 only: the shunt resistor, more than 0
//	max_current number           3.2       ina219 only: the largest expected current, A; sets the calibration (2..65534)
//	iio_device  string           -         dht22 only: the kernel dht11 driver's IIO device under /sys/bus/iio/devices, such as "iio:device0"
//
// The I2C chip models and their addresses: bme280 and bmp280 0x76 or 0x77;
// ads1115 and ads1015 0x48..0x4b; mcp23017 0x20..0x27; pcf8574 0x20..0x27
// (PCF8574A 0x38..0x3f); ina219 0x40..0x4f; sht4x 0x44..0x46; scd4x 0x62;
// bh1750 0x23 or 0x5c. A dht22 sits on a gpio bus with a pin, read through
// the kernel's dht11 IIO driver (iio_device).
//
// ds18b20 (on a onewire bus), pwm (on a pwm bus) and mcp3008 (on an spi bus)
// have no address, pin, active_low, pull or registers. An mcp3008's sim
// values give the voltage of its inputs (ch0..ch7, 0..vref), a
// pulse_counter's its rate (pulses per second, 0..10000); the others take no
// sim values (a ds18b20 may be a zone sensor, like an sht3x). A
// pulse_counter sits on a gpio bus with a pin (and pull) like gpio_in.
//
// The models and their channels (what a capability's read.channel names):
//
//	model      channels                          value            writable
//	sht3x      temperature (°C), humidity (%)    number           no
//	registers  the name of one of its registers  number, integer  if the register is writable
//	gpio_in    none: leave channel out           boolean          no
//	gpio_out   none: leave channel out           boolean          yes
//	modbus     the name of one of its registers  boolean for bool registers, else number or integer  if the register is writable
//	serial_line a named group of its response    number, integer  no
//	ds18b20    temperature (°C; may be left out)  number           no
//	pwm        duty (%), frequency (Hz)          number           yes, read back from the kernel's files
//	mcp3008    its inputs' names; ch0..ch7, diff0..diff7 (V); raw0..raw7 (the 10-bit code)  number; raw: number or integer  no
//	pulse_counter total, rate (per s), rate_per_minute (pulses × per_pulse)  number or integer  no
//	bme280     temperature (°C), pressure (hPa), humidity (%)  number  no
//	bmp280     temperature (°C), pressure (hPa)  number           no
//	ads1115    the name of one of its inputs     number           no
//	ads1015    the name of one of its inputs     number           no
//	mcp23017   the name of one of its pins       boolean          if the pin's mode is output
//	pcf8574    the name of one of its pins       boolean          if the pin's mode is output
//	ina219     bus_voltage (V), shunt_voltage (mV), current (A), power (W)  number  no
//	mqtt       the name of one of its channels (or its preset's)  number, integer, boolean or enum  if the channel has a command topic
//	sht4x      temperature (°C), humidity (%)    number           no
//	scd4x      co2 (ppm), temperature (°C), humidity (%)  number  no
//	bh1750     illuminance (lx)                  number           no
//	dht22      temperature (°C), humidity (%)    number           no
//
// An input of an ads1015, ads1115 or mcp3008 (devices[].inputs[]):
//
//	key         type     default   constraint
//	name        name     required  unique within the device; the channel (on an mcp3008 not one of its own, ch0.. diff0.. raw0..)
//	input       string   required  ads1x15: a0, a1, a2, a3 (against GND) or a0_a1, a0_a3, a1_a3, a2_a3 (differential); mcp3008: ch0..ch7 (against GND) or diff0..diff7 (differential)
//	full_scale  number   4.096     ads1x15 only: the PGA's full-scale volts: 6.144, 4.096, 2.048, 1.024, 0.512 or 0.256 (an mcp3008's full scale is its vref)
//	as          string   volts     volts; milliamps (volts / shunt_ohms); percent (linear from zero to full)
//	shunt_ohms  number   -         milliamps: required; percent: the reading is the loop's mA (zero 4, full 20 by default)
//	zero        number   -         percent: the volts (or mA with shunt_ohms) that read 0 %; required without shunt_ohms
//	full        number   -         percent: the volts (or mA) that read 100 %; required without shunt_ohms; not equal to zero (may be below it)
//
// A pin of an mcp23017 or pcf8574 (devices[].pins[]):
//
//	key         type     default   constraint
//	name        name     required  unique within the device; the channel
//	pin         integer  required  0..15 on an mcp23017 (A0..A7 = 0..7, B0..B7 = 8..15), 0..7 on a pcf8574; unique within the device
//	mode        string   input     input or output (output pins take do_*)
//	active_low  boolean  false     logical true is the line low (most relay boards)
//	pull_up     boolean  false     mcp23017 inputs only: the 100 kΩ pull-up
//
// A register of a registers device (devices[].registers[]). Its engineering
// value is raw*scale + offset:
//
//	key         type     default   constraint
//	name        name     required  unique within the device
//	address     integer  required  register pointer 0x00..0xff
//	type        string   required  uint8, int8, uint16, int16, uint32, int32 or float32
//	byte_order  string   big       big or little
//	scale       number   1         not 0
//	offset      number   0
//	writable    boolean  false     true lets a do action write the register
//
// A register of a modbus device (devices[].registers[]), in the words of
// Telegraf and EdgeX. Its engineering value is raw*scale + offset; a write
// encodes with the same codec, so a setpoint written as a scaled int16 lands
// on the right register value:
//
//	key         type     default   constraint
//	name        name     required  unique within the device
//	table       string   required  coil (read/write bit, FC 1/5/15), discrete (read-only bit, FC 2), holding (read/write register, FC 3/6/16) or input (read-only register, FC 4)
//	address     integer  required  0-based PDU address, 0..65535 (holding register 40001 is holding 0); the value must end by 65535
//	type        string   required  bool, int16, uint16, int32, uint32, int64, uint64, float32, float64 or string; coil and discrete: bool only
//	byte_order  string   ABCD      ABCD (big endian), DCBA (little endian), BADC (bytes swapped in each register) or CDAB (registers swapped); not for coil and discrete
//	bit         integer  -         bool in a holding or input register: required, 0..15 (0 the least significant); other types: not allowed
//	length      integer  -         string: required, 1..125 registers of two characters; other types: not allowed
//	scale       number   1         not 0; not for bits
//	offset      number   0         not for bits
//	writable    boolean  false     coil and holding only; not for a bit of a holding register (use a coil) or a string
//
// A device's simulator settings (devices[].sim):
//
//	key      type                       default  constraint
//	values   mapping of name to number  none     registers and modbus models: initial engineering value by register name; must fit the register's raw type
//	                                             I2C chip models: the simulated chip's value by channel, in the channel's unit (bme280 default 20 °C, 1013.25 hPa, 50 %; sht3x 20 °C, 50 % where no zone drives it; ina219 default 12 V, 0.5 A; expander input pins 0 or 1, the logical level)
//	level    boolean                    false    gpio models only: initial logical level
//	response string                     -        serial_line only: the line the simulated instrument answers with; must match the device's response pattern
//	profile  string                     ""       modbus only: vfd (speed follows speed_setpoint at 5 Hz/s; needs registers speed_setpoint in holding and speed, optionally running) or energy_meter (power in W and energy in kWh of the simulated site; needs registers power and energy)
//
// A capability (capabilities[]) is one observable quantity, served as the
// tool read_<name>, with an optional action served as do.tool:
//
//	key          type             default   constraint
//	name         name             required  unique among capabilities; read_<name> is at most 64 characters
//	description  string           ""        shown to agents as the read tool's description
//	type         string           required  number, integer, boolean or enum; must fit the channel (see the model table)
//	unit         string           ""        required for number and integer ("°C", "%", "lx"); not allowed for boolean and enum
//	ttl          duration         5s        more than 0; how long a reading stays fresh
//	location     string           ""        where the capability is ("zone1"); matched by can_do
//	tags         list of strings  none      semantic words matched by can_do ("temperature", "heating")
//	read         binding          required  {device: <device name>, channel: <channel>}
//	do           action           none      makes the capability actionable
//	health       health           defaults  how quality is derived from the source's behaviour, see below
//	observe      observe          defaults  the updates of a subscription to the capability's resource, see below
//	history      history          defaults  the recent samples the capability keeps, see below
//
// A binding (capabilities[].read): device is required and names a device;
// channel names one of the device's channels, and is required for every
// model but gpio_in, gpio_out and ds18b20 (see the model table: a gpio
// device has no channel).
//
// An action (capabilities[].do) writes to the same channel that read binds,
// which must be writable (see the model table: a gpio_out device, a
// register with writable: true, an expander's output pin, a pwm channel,
// an mqtt channel with a command topic):
//
//	key           type             default   constraint
//	tool          string           required  do_ then lower_snake_case ("do_set_heater"), at most 64 characters
//	description   string           ""        shown to agents as the do tool's description
//	side_effects  list of strings  required  at least one: what happens in the world, declared to agents before they act
//	compensable   boolean          false     true if calling the tool again with the previous value reverses the action
//	settle        duration         0         more than 0, at most 10s: how long the device takes to apply a write; do_* waits this long before reading the value back
//	constraints   constraints      none      bounds on the value an agent may set
//	depends_on    list of strings  none      capabilities whose readings the action's safety depends on; each names another capability, no duplicates
//	safe_value    scalar           none      the value that puts the actuator in its safe state (heater off: false; pump stopped; fan 0); must fit the type and constraints
//
// A move to the safe value is never refused by a cooldown, rate limit,
// time window, approval, maximum change, quorum or the health of the
// readings the action depends on; only the caller's role, the value's
// constraints and an interlock whose when selects the safe value refuse it
// (an interlock without when does not apply to it). can_do says when the
// safe direction is open while other values are blocked.
//
// While a capability in depends_on has no reliable value (quality error),
// can_do blocks the action with source_unreachable and do_* refuses it; while
// one is stale or degraded the action is not plainly allowed
// (requires_human_approval, with the reading named in the reason).
//
// Constraints (capabilities[].do.constraints); an absent bound is no bound:
//
//	key   type             default  constraint
//	min   number           none     number and integer only; not more than max
//	max   number           none     number and integer only
//	step  number           none     number and integer only; more than 0
//	enum  list of strings  none     required for, and only for, enum capabilities; no duplicates
//
// A capability's health (capabilities[].health) tunes how the quality of its
// readings is derived; the rules and their precedence are in
// docs/manifest.md ("Quality, health and caching") and the capabilities
// package. Every key is optional:
//
//	key              type       default  constraint
//	plausible        range      none     number and integer only: {min, max} in the capability's unit, min not more than max; a value outside is degraded ("implausible")
//	max_rate         number     none     more than 0: the largest believable change per second, in the capability's unit (boolean: level changes per second); a faster change is degraded ("jump")
//	stuck_samples    integer    3 with stuck_for, else off  2..1000; number and integer only: this many consecutive bit-identical samples are degraded ("stuck")
//	stuck_for        duration   off      more than 0; number and integer only: a value bit-identical for this long (and stuck_samples samples) is degraded; only meaningful on a noisy quantity
//	on_device_error  string     error    error or degraded: the quality when the device answers with an error flag (an I2C NACK; a ds18b20's power-on 85 °C, where the default is degraded); degraded serves the last good value for up to max_stale
//	max_stale        duration   30s      more than 0; how long after its sample time the last good value is served as stale while fresh reads fail; later the read is error
//
// Stuck, rate and failure checks count bus transactions, not reads: a read
// answered from the cache (within the ttl) adds no sample.
//
// A capability's observe (capabilities[].observe) tunes the updates of a
// subscription to its resource promcp://<gateway>/capabilities/<name>
// (a change of quality is always sent). Every key is optional:
//
//	key       type       default  constraint
//	deadband  number     0        0 or more, in the capability's unit; number and integer only: a value is sent again when it moved by more than this from the last sent (0: any change)
//	max_rate  rate       1/s      "N/s", "N/min", "N/hour", "N/day", N at least 1: the most updates of one resource in that window
//	every     duration   the ttl  more than 0: how often a subscribed capability is sampled (through the cache)
//
// A capability's history (capabilities[].history), served as the template
// promcp://<gateway>/history/{capability}{?since,step,agg}:
//
//	key        type       default  constraint
//	ring       integer    720      1..100000: samples kept in memory
//	retention  duration   24h      more than 0, at most 8784h (366 days): how long samples stay in history.db under --state
//	every      duration   none     more than 0: background sampling, subscribed or not; without it the history holds the samples reads and subscriptions took
//
// Every tool name is unique across the gateway: the read_<name> tools, the
// do tools, and the built-in can_do.
//
// A tool group (groups[]) is served as its own MCP endpoint, /mcp/<name>
// over HTTP and serve --group NAME over stdio, with its own can_do. It
// holds every capability that any of its selectors picks, in manifest
// order; groups may overlap:
//
//	key           type             default   constraint
//	name          string           required  unique among groups; lower case letters, digits, _ and -, starting with a letter, at most 64 characters (a URL path segment)
//	description   string           ""        free text
//	capabilities  list of strings  none      capabilities by name; each names a capability, no duplicates
//	location      string           ""        every capability with this location; some capability must have it
//	tags          list of strings  none      every capability with any of these tags; some capability must have each
//
// At least one of capabilities, location and tags is required, the group
// must hold a capability, and it may serve at most MaxGroupTools tools (its
// read_*, its do_* and can_do) and MaxGroupDo do_* tools.
//
// A job (jobs[]) is a long-running action built from the capabilities'
// actions, served as start_<name> (a do_*: idempotency key, policy, side
// effects, compensation hint), read_status_<name> (a read_*: progress, the
// current step, the values applied, the ETA) and do_cancel_<name> (stops
// it and runs its compensation). Exactly one of hold, ramp and steps:
//
//	key           type             default     constraint
//	name          name             required    unique among jobs; its three tools unique among the gateway's tools
//	description   string           ""          free text
//	side_effects  list of strings  the actions'  declared in start_<name>
//	hold          mapping          none        {capability, value, for, restore}: apply value, hold it for (a duration), then restore (default: the value before the job)
//	ramp          mapping          none        {capability, to, rate, every}: move a number capability to `to` at rate (unit per second), one write every `every` (default 1s); at most MaxJobSteps writes
//	steps         list of steps    none        each {capability, value, hold, compensate}: apply each value and hold it; compensate (a value, or restore) undoes the step on cancel or failure, newest first
//	on_restart    string           compensate  compensate or resume: what becomes of a job the server stopped during (under --state)
//
// Each value must fit its capability's type and constraints, and each
// capability must have a do:. Every step acts through the capability's
// do_* path, so its policy (roles, cooldowns, interlocks) holds per step.
//
// The simulated world (sim), used by serve --sim:
//
//	key         type           default  constraint
//	seed        integer        1        0 means 1; makes noise repeatable
//	time_scale  number         1        0 or more (0 means 1); 60 makes a simulated minute pass every real second
//	zones       list of zone   none
//
// A zone (sim.zones[]) is a volume of air with simple thermal physics:
//
//	key                 type             default   constraint
//	name                name             required  unique among zones
//	temperature         number           0         initial air temperature, °C
//	humidity            number           0         initial relative humidity, %, 0..100
//	outside             number           0         outside air temperature, °C
//	leak_time_constant  duration         2h        more than 0; drift toward outside with the vents closed
//	vent_time_constant  duration         10m       more than 0; extra drift toward outside for each open vent
//	heater_rate         number           0.5       more than 0; °C per minute for each heater that is on
//	noise               number           0         0 or more; standard deviation of temperature noise, °C (humidity gets ten times that, in %)
//	sensors             list of strings  none      temperature sensors in this zone, of the models in ZoneSensorModels (the manifest reference lists them); a sensor belongs to one zone
//	heaters             list of strings  none      gpio_out devices warming this zone while on
//	vents               list of strings  none      gpio_out devices venting this zone while on
//	fans                list of strings  none      modbus devices with sim profile vfd; each adds speed/50Hz of a vent with fan_time_constant
//	fan_time_constant   duration         5m        more than 0; drift toward outside added by a fan at full speed
//
// # MQTT
//
// An mqtt bus (kind: mqtt) is a broker connection; its settings are under
// mqtt: (buses[].mqtt), and the line keys (device, address, port, …) are
// not allowed on it:
//
//	key          type      default           constraint
//	broker       string    required          mqtt://host[:1883] or mqtts://host[:8883]; no user:password in the URL
//	client_id    string    <gateway>-<bus>
//	ca           string    system roots      PEM file of the broker's CA; mqtts only
//	cert, key    string    none              PEM client certificate and key, both or neither; mqtts only
//	credentials  string    none              file: username on line 1, password on line 2; must be chmod 600
//	protocol     integer   5                 5 only (3.1.1 is refused with the reason)
//	keepalive    duration  30s               1s..18h
//
// File names are relative to the manifest's directory.
//
// An mqtt device (model: mqtt, on an mqtt bus) has its topics under mqtt:
// (devices[].mqtt):
//
//	key           type              default       constraint
//	preset        word              none          tasmota, zigbee2mqtt or shelly; needs topic
//	topic         string            none          the Tasmota topic or Zigbee2MQTT friendly name; one level, no wildcards
//	availability  string            the preset's  topic where the device or its Last Will says it is offline
//	offline       string            offline       the availability payload meaning offline (case ignored; a JSON "state" counts)
//	channels      list of channel   none          required without a preset; names unique
//
// A channel (devices[].mqtt.channels[]):
//
//	key      type     default      constraint
//	name     string   required     what capabilities' read.channel names
//	state    string   required     topic the value is published on; no wildcards
//	path     string   whole        dot-separated JSON path into the payload ("ENERGY.Power")
//	command  string   none         topic a do_* publishes on; none makes the channel read-only
//	payload  string   {{value}}    command template with {{value}} (text; booleans as on/off) or {{json}}
//	on, off  string   ON, OFF      a boolean's words (JSON true/false and "true"/"false" are read too)
//	retain   boolean  false        publish commands retained
//
// With preset tasmota, channel power (power1..power8) is stat/<topic>/POWER
// commanded on cmnd/<topic>/POWER, any other channel a JSON path in
// tele/<topic>/SENSOR, and the availability topic tele/<topic>/LWT. With
// preset zigbee2mqtt, any channel is a JSON key of zigbee2mqtt/<topic>,
// commanded on zigbee2mqtt/<topic>/set with {"<channel>": value}, and the
// availability topic zigbee2mqtt/<topic>/availability. With preset shelly
// (a first-generation Shelly), a channel is the topic under
// shellies/<topic>/ ("emeter/0/power", "relay/0"), relay/<n> is commanded
// on shellies/<topic>/relay/<n>/command with on or off, and the
// availability topic is shellies/<topic>/online (false is offline). Declared channels
// replace the preset's of the same name. In the simulator, sim.values
// (by channel) and sim.level (power) give a preset device's first state.
//
// # Defaults
//
// Parse fills Register.ByteOrder (big) and Register.Scale (1) when the
// manifest leaves them out, so consumers can use them as they are; likewise
// ModbusRegister.ByteOrder (ABCD), Scale (1) and Bit (-1: no bit), the
// serial settings of modbus_rtu and serial buses (9600 8N1, rs485 none),
// Bus.Retries (2) on Modbus and serial buses and the serial_line
// terminator ("\r\n"). The other
// defaults in the tables (Bus.Timeout, Capability.TTL, Sim.Seed,
// Sim.TimeScale and the Zone constants) are left zero in the Manifest, as
// their doc comments say "zero means the default": consumers apply
// [DefaultTimeout], [DefaultTTL] and the simulator's defaults.
//
// # Errors
//
// Parse reports every problem at once, not only the first: the returned
// error is the errors.Join of one [*Error] per problem, sorted by position,
// each printed as
//
//	greenhouse.yml:14:21: devices[2].registers[0].byte_order: unknown value "ABDC" (want big or little)
//
// Each *Error unwraps to one sentinel (ErrSyntax, ErrType, ErrUnknownField,
// ErrUnknownValue, ErrMissing, ErrDuplicate, ErrBadReference, ErrBadName,
// ErrRange, ErrNotAllowed) for errors.Is. When the YAML itself does not
// parse, the error is a single ErrSyntax. Parse never panics, whatever the
// input.
//
// # Concurrency
//
// Load and Parse are safe for concurrent use. A returned Manifest is a plain
// value: it may be read from several goroutines but must not be modified
// while it is read.
package manifests
