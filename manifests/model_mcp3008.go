package manifests

import "strconv"

// ModelMCP3008 is a Microchip MCP3008 10-bit ADC on an spi bus. Channels:
// ch0..ch7 (single-ended) and diff0..diff7 (the datasheet's differential
// pairs), in volts of Vref; raw0..raw7 the 10-bit code; and the scaled
// inputs a device names. Its vref key is decoded and checked with the
// other kernel-file models' keys (buses.go), its inputs with the ADCs'
// (chips.go).
const ModelMCP3008 Model = "mcp3008"

// mcp3008Channels are the channels of an MCP3008.
var mcp3008Channels = func() []string {
	var cs []string
	for _, p := range []string{"ch", "diff", "raw"} {
		for i := range 8 {
			cs = append(cs, p+strconv.Itoa(i))
		}
	}
	return cs
}()

func declMCP3008() ModelDecl {
	var chs []ChannelDecl
	for i := range 8 {
		chs = append(chs, ChannelDecl{Name: mcp3008Channels[i], Unit: "V", Min: 0, Max: 5.5, Sim: DefaultVRef / 2})
	}
	for i := range 8 {
		chs = append(chs, ChannelDecl{Name: mcp3008Channels[8+i], Unit: "V", Min: -5.5, Max: 5.5})
	}
	for i := range 8 {
		chs = append(chs, ChannelDecl{Name: mcp3008Channels[16+i], Unit: "count", Min: 0, Max: 1023, Sim: 512, Integer: true})
	}
	return ModelDecl{
		Model:    ModelMCP3008,
		Doc:      "Microchip MCP3008 8-channel 10-bit ADC, read through the kernel's spidev",
		Bus:      BusSPI,
		Channels: chs,
		// SPI is clocked by the host: no timeouts, no CRC; a chip gone
		// leaves MISO high.
		Faults: []FaultKind{FaultNACK, FaultDropout, FaultStuck, FaultNoise, FaultImplausible},
		Sample: `- name: soil
  bus: spi0
  model: mcp3008
  vref: 3.3          # the Pi's 3.3 V rail on VREF
`,
	}
}
