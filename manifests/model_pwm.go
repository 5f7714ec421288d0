package manifests

// ModelPWM is one channel of a hardware PWM chip driving a fan or a
// dimmer. Channels: duty (%, writable) and frequency (Hz, writable). Its
// channel and frequency keys are decoded and checked with the other
// kernel-file models' keys (buses.go).
const ModelPWM Model = "pwm"

func declPWM() ModelDecl {
	return ModelDecl{
		Model: ModelPWM,
		Doc:   "one channel of a hardware PWM chip (a fan, a dimmer), driven through the kernel's pwm class",
		Bus:   BusPWM,
		Channels: []ChannelDecl{
			{Name: "duty", Unit: "%", Min: 0, Max: 100, Writable: true},
			{Name: "frequency", Unit: "Hz", Min: 0.1, Max: 1e8, Writable: true, Sim: DefaultPWMFrequency},
		},
		// The twin is the kernel's files: nothing to inject.
		Sample: `- name: fan
  bus: pwm0
  model: pwm
  channel: 0         # GPIO18 with dtoverlay=pwm-2chan
  frequency: 25000
`,
	}
}
