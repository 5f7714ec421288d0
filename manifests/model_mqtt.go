package manifests

import "slices"

// The mqtt model's declaration. ModelMQTT, its keys' decoding and checks
// and its channels' binding stay with the mqtt bus in mqtt.go.

func declMQTT() ModelDecl {
	return ModelDecl{
		Model: ModelMQTT,
		Doc:   "a device seen through an MQTT broker (Tasmota, Zigbee2MQTT, ESPHome, Shelly): its topics' values are its channels",
		Bus:   BusMQTT,
		named: mqttChannelNames,
		// With a preset, any key of the device's state is a channel too.
		open: func(dev Device) bool { return dev.MQTT != nil && dev.MQTT.Preset != "" },
		// A device on a broker drops off (its Last Will) or falls silent.
		Faults: []FaultKind{FaultDropout, FaultStuck},
		Sample: `- name: boiler
  bus: broker
  model: mqtt
  mqtt:
    channels:   # a channel per value; with a preset, any key of its state
      - name: temperature
        state: boiler/temperature
`,
	}
}

// mqttChannelNames are the channels an mqtt device declares, each once.
func mqttChannelNames(dev Device) []string {
	if dev.MQTT == nil {
		return nil
	}
	var names []string
	for _, ch := range dev.MQTT.Channels {
		if !slices.Contains(names, ch.Name) {
			names = append(names, ch.Name)
		}
	}
	return names
}
