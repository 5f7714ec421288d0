package manifests

// ModelSHT3x is a Sensirion SHT30/31/35 temperature and humidity sensor on
// I2C (address 0x44 or 0x45). Channels: temperature (°C), humidity (%).
const ModelSHT3x Model = "sht3x"

func declSHT3x() ModelDecl {
	return ModelDecl{
		Model:       ModelSHT3x,
		An:          true,
		Doc:         "Sensirion SHT30/31/35 temperature and humidity sensor",
		Addresses:   []uint16{0x44, 0x45},
		AddressHint: "want 0x44 or 0x45 for an sht3x",
		Channels: []ChannelDecl{
			{Name: "temperature", Unit: "°C", Min: -40, Max: 125, Sim: DefaultSimTemperature},
			{Name: "humidity", Unit: "%", Min: 0, Max: 100, Sim: DefaultSimHumidity},
		},
		Faults: allFaults(),
		Zone:   true,
		Sample: `- name: climate
  bus: i2c1
  model: sht3x
  address: 0x44      # ADDR to GND; 0x45 with ADDR high
`,
	}
}
