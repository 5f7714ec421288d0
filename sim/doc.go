// Package sim is the bus-level simulator: a [World] built from a manifest
// that hands out simulated I²C buses and GPIO pins implementing periph.io's
// i2c.BusCloser and gpio.PinIO, so that the real drivers run on it
// unchanged.
//
// Simulated devices answer byte for byte like the chips: an SHT3x measures
// the temperature and humidity of its zone, with correct CRCs and seeded
// noise, and NACKs what the chip NACKs (reads without a pending result,
// unknown commands) by returning an error that wraps EREMOTEIO, as Linux
// i2c-dev does; a register-map device keeps a 256-byte register file behind
// a register pointer. A missing address NACKs the same way.
//
// # Modbus
//
// Each modbus device of the manifest is a [ModbusSlave]: its four tables
// hold the declared registers (other addresses answer "illegal data
// address"), writes land only on registers declared writable, and values
// are encoded with the same codec the driver decodes with. A [ModbusServer]
// answers real frames for the slaves of one line: Modbus TCP (MBAP) and RTU
// over TCP on a listener, RTU on any byte stream such as the master side of
// a [PTY], whose slave side a driver opens exactly as it opens
// /dev/ttyUSB0. [World.StartLines] runs every Modbus bus of the manifest
// that way for serve --sim; [World.AllModbus] serves every slave on one
// address for promcp-device sim --modbus-tcp.
//
// A serial_line device is a [LineInstrument] that answers its request with
// the line its sim section gives; StartLines serves serial buses on a pty
// (or, where none can be made, a loopback socket standing in for the port;
// [ModbusEndpoints.OpenPort] opens either).
//
// Profiles give slaves behaviour on the world's clock: a vfd's speed follows
// its speed_setpoint at [VFDRamp] Hz/s and its fan cools the zones that list
// it under fans (like an open vent scaled by speed/[VFDMaxHz], with the
// zone's FanTimeConstant); an energy_meter reports the site's power
// ([MeterBaseLoad], each fan's cube-law draw, [HeaterPower] per heater on)
// and integrates energy in kWh. Fault knobs on a slave (SetException,
// SetSilent, SetGarbleCRC) and on a server (DropConnections) let tests
// provoke exceptions, timeouts, bad CRCs and dropped connections.
//
// # Physics
//
// Each zone of the manifest's sim section has a temperature T (°C) and a
// relative humidity RH (%). T relaxes toward the zone's Outside temperature
// with the time constant LeakTimeConstant, plus 1/VentTimeConstant for each
// open vent, and rises by HeaterRate °C per minute for each heater that is
// on. RH starts at the zone's Humidity and moves by -4 % per °C of the
// warming or cooling that happens in place (heaters, leak); open vents
// replace air instead, pulling RH toward 50 % at the vents' rate. RH reads
// clamped to 5..100 %. Heaters and vents are gpio_out devices; "on" is their
// logical level (active_low applied).
//
// State is integrated lazily on the injected [clock.Clock]: whenever a sensor is
// read, a zone observed or a pin changed, the zones advance from their last
// update to Clock.Now() in steps of at most one simulated second (at most
// 100000 steps per advance), and a pin change is applied only after that
// advance, so heater on-time is accounted exactly. With a [clock.Manual] the
// world is deterministic; noise comes from a PCG generator per zone seeded
// from the manifest's seed.
//
// # Faults
//
// Faults act at the bus, so the drivers above see what a failing chip or
// line produces (see manifests.FaultKind for the kinds and
// manifests.FaultApplies for which apply to which model). [World.Inject]
// and [World.Clear] drive them from Go; [World.Play] runs a scenario (a
// timeline parsed by manifests.ParseScenario) on the world's clock. A
// scenario is applied lazily: each transaction looks up the fault active on
// its device at Clock.Now(), so a clock.Manual drives a timeline exactly and
// no goroutine runs it. An injected fault takes precedence over the
// scenario's; among overlapping scenario faults the later listed wins.
//
// Delays (slow answers, a device holding the bus past the driver's
// timeout) are real time, as bus latency is on hardware; tests run them in
// a testing/synctest bubble, where they take no time. The bus is held, the
// world is not, while a device delays.
//
// Wiring another bus kind (the Modbus slaves of issue 3): look up
// World.faultLocked(device, now) in the slave's request handler, sleep
// faultState.delay(timeout) outside the world's lock, answer nothing for
// dropout and timeout, an exception response for nack, a corrupted CRC for
// crc (RTU), and distort register values for stuck, noise and implausible
// as registers.distort does; then add the Modbus models to
// manifests.FaultApplies.
//
// # Concurrency
//
// A World, its buses and its pins are safe for concurrent use; one mutex
// guards the whole world. Buses returned by [World.I2C] belong to the
// caller, who closes them; closing one handle does not affect others.
package sim
