package manifests

import "slices"

// The GPIO expanders. Their channels are the device's pins, by name:
// booleans, an output pin writable.
const (
	// ModelMCP23017 is a Microchip MCP23017 16-pin expander (0x20..0x27).
	// Channels: its Pins by name (booleans; outputs writable).
	ModelMCP23017 Model = "mcp23017"
	// ModelPCF8574 is an 8-pin PCF8574 (0x20..0x27) or PCF8574A
	// (0x38..0x3F) expander. Channels: its Pins by name.
	ModelPCF8574 Model = "pcf8574"
)

func declMCP23017() ModelDecl {
	return declExpander(ModelMCP23017, true, "Microchip MCP23017 16-pin GPIO expander",
		addressRange(0x20, 0x27), "an mcp23017 answers at 0x20..0x27, set by A2..A0", "0x20      # A2..A0 to GND")
}

func declPCF8574() ModelDecl {
	return declExpander(ModelPCF8574, false, "NXP PCF8574 (or PCF8574A) 8-pin GPIO expander",
		slices.Concat(addressRange(0x20, 0x27), addressRange(0x38, 0x3F)), "a pcf8574 answers at 0x20..0x27, a PCF8574A at 0x38..0x3f", "0x20      # A2..A0 to GND; a PCF8574A at 0x38")
}

// declExpander declares an expander. Its pins key, which both expanders
// share, is decoded and checked in chips.go.
func declExpander(m Model, an bool, doc string, addrs []uint16, hint, sampleAddr string) ModelDecl {
	return ModelDecl{
		Model:       m,
		An:          an,
		Doc:         doc,
		Addresses:   addrs,
		AddressHint: hint,
		named:       func(dev Device) []string { return namesOf(dev.Pins, func(p ExpanderPin) string { return p.Name }) },
		Type:        TypeBoolean,
		// A pin has no checksum, no range and no noise.
		Faults: slices.DeleteFunc(FaultKinds(), func(k FaultKind) bool {
			return k == FaultCRC || k == FaultNoise || k == FaultImplausible
		}),
		Sample: `- name: relays
  bus: i2c1
  model: ` + string(m) + `
  address: ` + sampleAddr + `
  pins:
    - {name: pump, pin: 0, mode: output, active_low: true}   # most relay boards switch on low
`,
	}
}
