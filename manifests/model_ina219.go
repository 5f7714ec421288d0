package manifests

import "math"

// ModelINA219 is a TI INA219 current monitor (0x40..0x4F). Channels:
// bus_voltage (V), shunt_voltage (mV), current (A), power (W).
const ModelINA219 Model = "ina219"

// INA219 defaults: the breakout boards' 0.1 Ω shunt and the 3.2 A the
// chip reads across it at ±320 mV.
const (
	DefaultShuntOhms  = 0.1
	DefaultMaxCurrent = 3.2
)

func declINA219() ModelDecl {
	return ModelDecl{
		Model:       ModelINA219,
		An:          true,
		Doc:         "TI INA219 current and power monitor across a shunt",
		Addresses:   addressRange(0x40, 0x4F),
		AddressHint: "an ina219 answers at 0x40..0x4f, set by A1 and A0",
		Channels: []ChannelDecl{
			{Name: "bus_voltage", Unit: "V", Min: 0, Max: 32, Sim: 12},
			{Name: "shunt_voltage", Unit: "mV", Min: -320, Max: 320, Sim: 50},
			{Name: "current", Unit: "A", Min: -3.2, Max: 3.2, Sim: 0.5},
			{Name: "power", Unit: "W", Min: 0, Max: 102.4, Sim: 6},
		},
		Keys:     []string{"shunt_ohms", "max_current"},
		KeysNote: "only ina219 has a shunt",
		decode:   decodeINA219,
		check:    checkINA219,
		Faults:   chipFaults(),
		Sample: `- name: supply
  bus: i2c1
  model: ina219
  address: 0x40      # A1, A0 to GND
  shunt_ohms: 0.1    # the breakout's R100
  max_current: 3.2
`,
	}
}

// decodeINA219 decodes shunt_ohms and max_current, with the breakout
// boards' defaults on an ina219.
func decodeINA219(o obj, dev *Device, own bool) {
	if own {
		dev.ShuntOhms, dev.MaxCurrent = DefaultShuntOhms, DefaultMaxCurrent
	}
	numIf(o, "shunt_ohms", &dev.ShuntOhms, positive, ": %g (want the shunt resistor in ohms, more than 0, such as 0.1)")
	numIf(o, "max_current", &dev.MaxCurrent, positive, ": %g (want the largest expected current in amperes, more than 0)")
}

// checkINA219 checks that the calibration register fits 15 bits.
func checkINA219(c *checker, dev Device, path string) {
	lsb := dev.MaxCurrent / 32768
	if cal := math.Trunc(0.04096 / (lsb * dev.ShuntOhms)); dev.ShuntOhms > 0 && dev.MaxCurrent > 0 && (cal < 2 || cal > 0xFFFE) {
		lo, hi := 32768*0.04096/(dev.ShuntOhms*0xFFFE), 32768*0.04096/(dev.ShuntOhms*2)
		c.d.add(join(path, "max_current"), ErrRange, ": %g A with shunt %g Ω gives calibration register %.0f (want 2..65534: with this shunt, max_current %.3g..%.4g A)", dev.MaxCurrent, dev.ShuntOhms, cal, lo, hi)
	}
}
