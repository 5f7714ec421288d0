package manifests

// ModelPulseCounter counts the edges of a GPIO input (a flow meter, a rain
// gauge). Channels: total, rate (per second) and rate_per_minute, each
// pulses × per_pulse. Its edge, debounce and per_pulse keys are decoded
// and checked with the other kernel-file models' keys (buses.go).
const ModelPulseCounter Model = "pulse_counter"

func declPulseCounter() ModelDecl {
	return ModelDecl{
		Model: ModelPulseCounter,
		Doc:   "counts the edges of a GPIO input (a flow meter, a rain gauge, an energy meter's S0 output)",
		Bus:   BusGPIO,
		// The units are pulses × per_pulse: what a pulse stands for.
		Channels: []ChannelDecl{
			{Name: "total", Unit: "pulses", Min: 0, Max: 1e15, Integer: true},
			{Name: "rate", Unit: "pulses/s", Min: 0, Max: 10000, Integer: true},
			{Name: "rate_per_minute", Unit: "pulses/min", Min: 0, Max: 600000, Integer: true},
		},
		// stuck: the line makes no edges; noise: each pulse bounces.
		Faults: []FaultKind{FaultStuck, FaultNoise},
		Sample: `- name: rain
  bus: gpio
  model: pulse_counter
  pin: GPIO17        # BCM numbering
  edge: falling
  per_pulse: 0.2794  # mm of rain per tip of the bucket
`,
	}
}
