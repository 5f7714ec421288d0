// Package serial talks to line instruments on a serial port (RS-232 or
// RS-485): sensors, scales and analysers that answer a text request with a
// line of text rather than speaking Modbus. The manifest declares the
// request, the line terminator and a regular expression whose named groups
// are the values; this package sends the request, reads one line within
// the bus timeout and extracts the numbers.
//
// Opening the port is the caller's business (modbus.OpenPort opens one with
// the manifest's settings); a [Line] owns the port it is given.
//
// # Concurrency
//
// A Line is safe for concurrent use and puts one transaction at a time on
// the wire, first come first served (an RS-485 pair is half duplex and
// shared). Concurrent reads of the same instrument share one transaction.
package serial
