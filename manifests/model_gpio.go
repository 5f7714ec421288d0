package manifests

// ModelGPIOIn is a digital input pin. Channel: "" (the level, a boolean).
// Its pin, active_low and pull keys are checked with the I2C and GPIO
// devices' (check.go).
const ModelGPIOIn Model = "gpio_in"

// ModelGPIOOut is a digital output pin driving a relay or a vent motor.
// Channel: "" (the level, a boolean); writable.
const ModelGPIOOut Model = "gpio_out"

// pinFaults: a GPIO line has no transaction that can fail, be NACKed,
// time out or carry a checksum, and no range to leave: only stuck, noise
// (chatter) and slow apply.
var pinFaults = []FaultKind{FaultStuck, FaultNoise, FaultSlow}

func declGPIOIn() ModelDecl {
	return ModelDecl{
		Model: ModelGPIOIn,
		Doc:   "a digital input pin of the host (a switch, a float, a door contact)",
		Bus:   BusGPIO,
		Pin:   true,
		Type:  TypeBoolean,
		// One channel, its level: a capability leaves channel out.
		Channels: []ChannelDecl{{Name: ""}},
		Faults:   pinFaults,
		Sample: `- name: door
  bus: gpio
  model: gpio_in
  pin: GPIO27        # BCM numbering
  pull: up
  active_low: true   # the contact closes to ground
`,
	}
}

func declGPIOOut() ModelDecl {
	return ModelDecl{
		Model:    ModelGPIOOut,
		Doc:      "a digital output pin of the host driving a relay or a vent motor",
		Bus:      BusGPIO,
		Pin:      true,
		Type:     TypeBoolean,
		Channels: []ChannelDecl{{Name: "", Writable: true}},
		Faults:   pinFaults,
		Sample: `- name: heater_relay
  bus: gpio
  model: gpio_out
  pin: GPIO17        # BCM numbering
`,
	}
}
