package manifests

// ModelSCD4x is a Sensirion SCD40/41 photoacoustic CO₂ sensor on I2C
// (0x62), in periodic measurement. Channels: co2 (ppm), temperature (°C),
// humidity (%).
const ModelSCD4x Model = "scd4x"

func declSCD4x() ModelDecl {
	return ModelDecl{
		Model:       ModelSCD4x,
		Doc:         "Sensirion SCD40/41 CO₂, temperature and humidity sensor",
		Addresses:   []uint16{0x62},
		AddressHint: "an scd4x answers at 0x62 only",
		Channels: []ChannelDecl{
			{Name: "co2", Unit: "ppm", Min: 0, Max: 40000, Sim: 600, Health: true},
			{Name: "temperature", Unit: "°C", Min: -10, Max: 60, Sim: DefaultSimTemperature, Health: true},
			{Name: "humidity", Unit: "%", Min: 0, Max: 100, Sim: DefaultSimHumidity, Health: true},
		},
		Faults: allFaults(),
		Zone:   true,
		Sample: `- name: co2_sensor
  bus: i2c1
  model: scd4x
  address: 0x62      # give its capabilities ttl: 5s, its measuring period
`,
	}
}
