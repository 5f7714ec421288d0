package manifests

// ModelRegisters is a generic I2C register-map device. Channels: the
// names of its Registers. It is on an I2C bus but no chip: it answers at
// any address and has no fixed channels. Its registers key is decoded with
// the devices' (decode.go) and checked in check.go.
const ModelRegisters Model = "registers"

func declRegisters() ModelDecl {
	return ModelDecl{
		Model: ModelRegisters,
		Doc:   "a generic I2C register-map device: its registers, at any address, are its channels",
		Bus:   BusI2C,
		named: registerNames,
		// The register protocol has no checksum.
		Faults: chipFaults(),
		Sample: `- name: grow_light
  bus: i2c1
  model: registers
  address: 0x20
  registers:   # a register per channel
    - name: lux
      address: 0x02
      type: uint16
      byte_order: big
`,
	}
}
