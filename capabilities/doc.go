// Package capabilities binds a manifest's capabilities to open devices: it
// opens each bus once, builds the driver for each device, and gives every
// capability a Read (and, for actions, a Write) that speaks in engineering
// values: float64 in the capability's unit, bool, or string.
//
// Hardware is reached through the [Hardware] seam, which the host (periph.io
// on a real gateway) and the simulator both implement, so the driver code is
// the same on both.
//
// # Quality
//
// Every capability has a health tracker fed once per bus transaction on its
// source (never by reads served from the cache), and a sampler that serves a
// sample younger than the caller's maximum age (at most the TTL) from cache
// and makes concurrent callers share one transaction. Quality is derived
// from the latest transaction, the first matching rule winning:
//
//  1. failed with a device error flag (drivers.ErrNACK) and on_device_error
//     error (the default; a ds18b20 defaults to degraded): error, "read failed (nack)";
//  2. failed with a device error flag, on_device_error degraded, last good
//     value at most max_stale old: degraded, that value at its own sample
//     time, "device error (nack); last good value from 12 s ago";
//  3. failed otherwise, last good value at most max_stale old: stale, that
//     value at its own sample time, "read failed (timeout); last good value
//     from 12 s ago";
//  4. failed, no recent good value: error, "read failed (crc)" (and how old
//     the last good value is, if any);
//  5. a value outside the plausible range: degraded, "implausible: 130 °C
//     outside -10..60 °C";
//  6. a value that changed faster than max_rate from both the previous and
//     the last good sample, over at least one TTL: degraded, "jump: 2.5 °C/s
//     exceeds 0.5 °C/s";
//  7. a value bit-identical for stuck_samples transactions and stuck_for:
//     degraded, "stuck: unchanged for 30 s (5 samples)";
//  8. otherwise good.
//
// Only good values become the last good value. Times come from
// [Options].Clock: a reading's Time is always its sample's time.
//
// # Concurrency
//
// A [Set] and its capabilities are safe for concurrent use; the drivers
// serialise transactions per bus.
package capabilities
