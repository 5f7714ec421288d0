// Package gpio drives digital pins: an [Output] (a relay, a vent motor) and
// an [Input] (a switch), each with an active-low option that inverts the
// logical level.
//
// Both consume periph.io's gpio.PinIO (imported here as pgpio), obtained
// from host.Host on hardware or from the simulator. Pins are not closed:
// they are shared host state.
//
// # Concurrency
//
// [Output] and [Input] are safe for concurrent use. GPIO calls do not block,
// so methods only check that ctx is not done before touching the pin.
package gpio
