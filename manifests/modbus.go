package manifests

import "github.com/promcp/promcp-device/drivers/modbus/modbusconf"

// Modbus and serial-line parts of the manifest: bus settings for RS-485 and
// TCP lines, the modbus and serial_line device models, and their register
// maps. The words (holding, input, coil, discrete; ABCD … DCBA) are the ones
// field engineers know from Telegraf and EdgeX.

// Bus kinds of Modbus and serial lines.
const (
	// BusModbusTCP is Modbus TCP (MBAP framing) to Address.
	BusModbusTCP BusKind = "modbus_tcp"
	// BusModbusRTU is Modbus RTU on a serial port (RS-485 or RS-232).
	BusModbusRTU BusKind = "modbus_rtu"
	// BusModbusRTUTCP is Modbus RTU frames carried on a TCP socket to
	// Address, as serial device servers do.
	BusModbusRTUTCP BusKind = "modbus_rtu_tcp"
	// BusSerial is a serial port shared by line instruments that speak text
	// or bytes (not Modbus).
	BusSerial BusKind = "serial"
)

// IsModbus reports whether k carries Modbus.
func (k BusKind) IsModbus() bool {
	return k == BusModbusTCP || k == BusModbusRTU || k == BusModbusRTUTCP
}

// IsSerialPort reports whether k is opened as a local serial port.
func (k BusKind) IsSerialPort() bool { return k == BusModbusRTU || k == BusSerial }

// IsNetwork reports whether k is reached through a TCP address.
func (k BusKind) IsNetwork() bool { return k == BusModbusTCP || k == BusModbusRTUTCP }

// The serial port settings, Modbus tables, value types, word orders and
// register maps are the modbus driver's own configuration (package
// modbusconf, which imports no hardware module, and whose constants such as
// modbusconf.TableHolding are the manifest's words): a manifest compiles
// into them, and Load fills their defaults, so that after Load a SerialSettings
// has no zero field and a ModbusRegister has its ByteOrder (ABCD), its Bit
// (-1 when absent) and a non-zero Scale (1 when absent).
type (
	// Parity is a serial line's parity bit.
	Parity = modbusconf.Parity
	// RS485 is how the driver switches an RS-485 transceiver between
	// sending and receiving.
	RS485 = modbusconf.RS485
	// SerialSettings are the settings of a serial port (modbus_rtu and
	// serial buses).
	SerialSettings = modbusconf.SerialConfig
	// Table is one of the four Modbus data tables.
	Table = modbusconf.Table
	// DataType is the encoding of a Modbus value.
	DataType = modbusconf.DataType
	// WordOrder is the order of a multi-byte Modbus value's bytes on the
	// wire.
	WordOrder = modbusconf.WordOrder
	// ModbusRegister is one named value of a modbus device. Its
	// engineering value is raw*Scale + Offset.
	ModbusRegister = modbusconf.Register
)

// Serial line defaults.
const (
	DefaultBaud     = modbusconf.DefaultBaud
	DefaultDataBits = modbusconf.DefaultDataBits
	DefaultStopBits = 1
	// DefaultRetries is how often a failed Modbus or serial transaction is
	// retried when the bus declares no retries.
	DefaultRetries = 2
)

// MaxReadRegisters and MaxReadBits are the most one Modbus read may carry.
const (
	MaxReadRegisters = 125
	MaxReadBits      = 2000
)

// LineInstrument is a serial_line device: the request it sends and how a
// value is found in its answer.
type LineInstrument struct {
	// Request is the text sent, terminator excluded (escape sequences such
	// as "\x02" come from YAML's double-quoted strings).
	Request string
	// Terminator ends the request and the response; default "\r\n".
	Terminator string
	// Response is a regular expression matched against the response line
	// (terminator removed); its named groups are the device's channels.
	Response string
}
