// Package capabilities binds a manifest's capabilities to open devices: it
// opens each bus once, builds the driver for each device, and gives every
// capability a Read (and, for actions, a Write) that speaks in engineering
// values: float64 in the capability's unit, bool, or string.
//
// Hardware is reached through the [Hardware] seam, which the host (periph.io
// on a real gateway) and the simulator both implement, so the driver code is
// the same on both.
//
// # Concurrency
//
// A [Set] and its capabilities are safe for concurrent use; the drivers
// serialise transactions per bus.
package capabilities
