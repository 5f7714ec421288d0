package manifests

// The Bosch BME280 and BMP280 (0x76, or 0x77 with SDO high).
const (
	// ModelBME280 is a Bosch BME280. Channels: temperature (°C), pressure
	// (hPa), humidity (%).
	ModelBME280 Model = "bme280"
	// ModelBMP280 is a Bosch BMP280, the BME280 without humidity.
	// Channels: temperature (°C), pressure (hPa).
	ModelBMP280 Model = "bmp280"
)

// DefaultSimPressure is the simulator's air pressure when no sim.values
// sets it: sim's DefaultPressure.
const DefaultSimPressure = 1013.25 // hPa

func declBME280() ModelDecl { return declBMx280(ModelBME280) }
func declBMP280() ModelDecl { return declBMx280(ModelBMP280) }

// declBMx280 declares the BME280 and, without its humidity, the BMP280.
func declBMx280(m Model) ModelDecl {
	d := ModelDecl{
		Model:       m,
		Doc:         "Bosch BME280 temperature, pressure and humidity sensor",
		Addresses:   []uint16{0x76, 0x77},
		AddressHint: "a " + string(m) + " answers at 0x76, or 0x77 with SDO high",
		Channels: []ChannelDecl{
			{Name: "temperature", Unit: "°C", Min: -40, Max: 85, Sim: DefaultSimTemperature},
			{Name: "pressure", Unit: "hPa", Min: 300, Max: 1100, Sim: DefaultSimPressure},
			{Name: "humidity", Unit: "%", Min: 0, Max: 100, Sim: DefaultSimHumidity},
		},
		Faults: chipFaults(),
		Zone:   true,
		Sample: `- name: weather
  bus: i2c1
  model: ` + string(m) + `
  address: 0x76      # SDO to GND; 0x77 with SDO high
`,
	}
	if m == ModelBMP280 {
		d.Doc = "Bosch BMP280 temperature and pressure sensor"
		d.Channels = d.Channels[:2]
	}
	return d
}
