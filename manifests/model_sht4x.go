package manifests

// ModelSHT4x is a Sensirion SHT40/41/45 temperature and humidity sensor on
// I2C (0x44; 0x45 and 0x46 for the -B and -C parts). Channels: temperature
// (°C), humidity (%).
const ModelSHT4x Model = "sht4x"

func declSHT4x() ModelDecl {
	return ModelDecl{
		Model:       ModelSHT4x,
		An:          true,
		Doc:         "Sensirion SHT40/41/45 temperature and humidity sensor",
		Addresses:   []uint16{0x44, 0x45, 0x46},
		AddressHint: "an sht4x answers at 0x44; the SHT4x-B parts at 0x45, -C at 0x46",
		Channels: []ChannelDecl{
			{Name: "temperature", Unit: "°C", Min: -40, Max: 125, Sim: DefaultSimTemperature, Health: true},
			{Name: "humidity", Unit: "%", Min: 0, Max: 100, Sim: DefaultSimHumidity, Health: true},
		},
		Faults: allFaults(),
		Zone:   true,
		Sample: `- name: air
  bus: i2c1
  model: sht4x
  address: 0x44      # SHT40-AD1B; 0x45 for the -B parts
`,
	}
}
