package driverconf

import (
	"testing"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/drivers/i2c/i2cconf"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
	"github.com/promcp/promcp-device/drivers/serial"
	"github.com/promcp/promcp-device/manifests"
)

// One definition: the manifest's register maps and serial settings are the
// drivers' own types, so a manifest value is a driver
// value. Should manifests declare a copy of one of them again, its
// assignment here stops compiling.
var (
	_ i2cconf.Register        = manifests.Register{}
	_ manifests.RegType       = i2cconf.RegInt16
	_ manifests.ByteOrder     = i2cconf.LittleEndian
	_ modbusconf.Register     = manifests.ModbusRegister{}
	_ manifests.Table         = modbusconf.TableInput
	_ manifests.DataType      = modbusconf.DataString
	_ manifests.WordOrder     = modbusconf.OrderBADC
	_ modbusconf.SerialConfig = manifests.SerialSettings{}
	_ manifests.Parity        = modbusconf.ParityEven
	_ manifests.RS485         = modbusconf.RS485RTS
)

// The manifest's default timeout (a bus that declares none) is the one each
// driver applies to a bus configured with none, so that a bus built
// without a manifest behaves as the manifest documents.
func TestDefaultTimeoutsAgree(t *testing.T) {
	for _, d := range []struct {
		driver string
		value  any
	}{
		{"i2c", i2c.DefaultTimeout},
		{"modbus", modbus.DefaultTimeout},
		{"serial", serial.DefaultTimeout},
	} {
		if d.value != manifests.DefaultTimeout {
			t.Errorf("%s default timeout %v, manifest %v", d.driver, d.value, manifests.DefaultTimeout)
		}
	}
}

func TestInstrumentCarriesEveryField(t *testing.T) {
	li := manifests.LineInstrument{Request: "W?", Terminator: "\n", Response: `(?P<w>\d+)`}
	if got := Instrument(li); got != (serial.InstrumentConfig{Request: "W?", Terminator: "\n", Response: `(?P<w>\d+)`}) {
		t.Errorf("Instrument = %+v", got)
	}
}
