package manifests

// ModelSerialLine is an instrument on a serial bus that answers a text
// request with a line. Channels: the named groups of its response
// pattern. Its request, terminator and response keys are decoded with the
// devices' (decode.go) and checked with the line models' (checkmodbus.go).
const ModelSerialLine Model = "serial_line"

func declSerialLine() ModelDecl {
	return ModelDecl{
		Model: ModelSerialLine,
		Doc:   "an instrument on a serial port that answers a text request with a line (a balance, a meter)",
		Bus:   BusSerial,
		named: func(dev Device) []string { return LineChannels(dev.Line) },
		// The twin answers its sim.response; it injects no faults.
		Sample: `- name: bench_scale
  bus: rs232
  model: serial_line
  request: "W?"
  terminator: "\r\n"
  response: 'W=\s*(?P<weight>-?[0-9.]+) g'   # a named group per channel
`,
	}
}
