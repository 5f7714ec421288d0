package manifests

// ModelBH1750 is a ROHM BH1750FVI ambient light sensor on I2C (0x23, or
// 0x5C with ADDR high), in continuous high-resolution mode. Channel:
// illuminance (lx).
const ModelBH1750 Model = "bh1750"

func declBH1750() ModelDecl {
	return ModelDecl{
		Model:       ModelBH1750,
		Doc:         "ROHM BH1750 ambient light sensor",
		Addresses:   []uint16{0x23, 0x5C},
		AddressHint: "a bh1750 answers at 0x23, or 0x5c with ADDR high",
		Channels: []ChannelDecl{
			{Name: "illuminance", Unit: "lx", Min: 0, Max: 54612.5, Sim: 320, Health: true},
		},
		Faults: chipFaults(),
		Sample: `- name: light_sensor
  bus: i2c1
  model: bh1750
  address: 0x23      # ADDR to GND; 0x5c with ADDR to 3V3
`,
	}
}
