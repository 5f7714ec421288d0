package manifests

// ModelModbus is a Modbus slave at UnitID on a Modbus bus. Channels: the
// names of its ModbusRegisters. It is on any of the three Modbus bus
// kinds (Buses). Its registers, profile, unit_id and max_span keys are
// decoded with the devices' (decode.go, profiles.go) and checked with the
// line models' (checkmodbus.go).
const ModelModbus Model = "modbus"

func declModbus() ModelDecl {
	return ModelDecl{
		Model: ModelModbus,
		Doc:   "a Modbus slave (a meter, a drive, a relay board): its registers, or a profile's, are its channels",
		Bus:   BusModbusTCP,
		Buses: []BusKind{BusModbusTCP, BusModbusRTU, BusModbusRTUTCP},
		named: modbusRegisterNames,
		// A nack is an exception response; crc garbles the RTU checksum
		// (on Modbus TCP, which has none, it does nothing visible).
		Faults: allFaults(),
		Sample: `- name: pump_meter
  bus: rs485
  model: modbus
  unit_id: 1
  registers:   # a register per channel
    - name: power
      table: input
      address: 0x0c
      type: float32
`,
	}
}
