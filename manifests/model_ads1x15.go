package manifests

// The TI ADS1115 (16-bit) and ADS1015 (12-bit) ADCs (0x48..0x4B). Their
// channels are the device's inputs, by name.
const (
	// ModelADS1115 is a TI ADS1115 16-bit ADC. Channels: its Inputs by name.
	ModelADS1115 Model = "ads1115"
	// ModelADS1015 is a TI ADS1015 12-bit ADC. Channels: its Inputs by name.
	ModelADS1015 Model = "ads1015"
)

func declADS1115() ModelDecl { return declADS1x15(ModelADS1115, "TI ADS1115 16-bit ADC, four inputs") }
func declADS1015() ModelDecl { return declADS1x15(ModelADS1015, "TI ADS1015 12-bit ADC, four inputs") }

// declADS1x15 declares an ADS1x15. Its inputs key, which an mcp3008 shares,
// is decoded and checked with the mcp3008's (chips.go).
func declADS1x15(m Model, doc string) ModelDecl {
	return ModelDecl{
		Model:       m,
		An:          true,
		Doc:         doc,
		Addresses:   addressRange(0x48, 0x4B),
		AddressHint: "an " + string(m) + " answers at 0x48..0x4b, ADDR to GND, VDD, SDA or SCL",
		named:       func(dev Device) []string { return namesOf(dev.Inputs, func(in ADCInput) string { return in.Name }) },
		Faults:      chipFaults(),
		Sample: `- name: adc
  bus: i2c1
  model: ` + string(m) + `
  address: 0x48      # ADDR to GND
  inputs:
    - {name: supply, input: a0, full_scale: 4.096}
`,
	}
}
