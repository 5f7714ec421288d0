package manifests

import "slices"

// ModelDS18B20 is a Maxim DS18B20 thermometer on a onewire bus, named by
// its ROM id ("28-0316a2795aff"). Channel: temperature (°C). Its rom key
// is decoded and checked with the other kernel-file models' keys
// (buses.go).
const ModelDS18B20 Model = "ds18b20"

func declDS18B20() ModelDecl {
	return ModelDecl{
		Model: ModelDS18B20,
		Doc:   "Maxim DS18B20 1-Wire thermometer, read through the kernel's w1 files",
		Bus:   BusOneWire,
		Channels: []ChannelDecl{
			{Name: "temperature", Unit: "°C", Min: -55, Max: 125, Sim: DefaultSimTemperature},
		},
		// nack and dropout take the sensor off the bus; implausible
		// without a value is the power-on 85 °C; the kernel times out for
		// it.
		Faults: slices.DeleteFunc(FaultKinds(), func(k FaultKind) bool { return k == FaultTimeout }),
		Zone:   true,
		Sample: `- name: tank
  bus: w1
  model: ds18b20
  rom: 28-0316a2795aff   # ls /sys/bus/w1/devices
`,
	}
}
