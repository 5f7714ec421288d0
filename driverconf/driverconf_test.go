package driverconf

import (
	"testing"

	"github.com/promcp/promcp-device/drivers/gpio"
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/serial"
	"github.com/promcp/promcp-device/manifests"
)

// The conversions above are type conversions, so every manifest enum value
// must be spelled the same in its driver, and the defaults must agree.
func TestEnumsAgree(t *testing.T) {
	pairs := []struct{ manifest, driver string }{
		{string(manifests.PullNone), string(gpio.PullNone)},
		{string(manifests.PullUp), string(gpio.PullUp)},
		{string(manifests.PullDown), string(gpio.PullDown)},
		{string(manifests.RegUint8), string(i2c.RegUint8)},
		{string(manifests.RegInt8), string(i2c.RegInt8)},
		{string(manifests.RegUint16), string(i2c.RegUint16)},
		{string(manifests.RegInt16), string(i2c.RegInt16)},
		{string(manifests.RegUint32), string(i2c.RegUint32)},
		{string(manifests.RegInt32), string(i2c.RegInt32)},
		{string(manifests.RegFloat32), string(i2c.RegFloat32)},
		{string(manifests.BigEndian), string(i2c.BigEndian)},
		{string(manifests.LittleEndian), string(i2c.LittleEndian)},
		{string(manifests.TableCoil), string(modbus.TableCoil)},
		{string(manifests.TableDiscrete), string(modbus.TableDiscrete)},
		{string(manifests.TableHolding), string(modbus.TableHolding)},
		{string(manifests.TableInput), string(modbus.TableInput)},
		{string(manifests.DataBool), string(modbus.DataBool)},
		{string(manifests.DataInt16), string(modbus.DataInt16)},
		{string(manifests.DataUint16), string(modbus.DataUint16)},
		{string(manifests.DataInt32), string(modbus.DataInt32)},
		{string(manifests.DataUint32), string(modbus.DataUint32)},
		{string(manifests.DataInt64), string(modbus.DataInt64)},
		{string(manifests.DataUint64), string(modbus.DataUint64)},
		{string(manifests.DataFloat32), string(modbus.DataFloat32)},
		{string(manifests.DataFloat64), string(modbus.DataFloat64)},
		{string(manifests.DataString), string(modbus.DataString)},
		{string(manifests.OrderABCD), string(modbus.OrderABCD)},
		{string(manifests.OrderDCBA), string(modbus.OrderDCBA)},
		{string(manifests.OrderBADC), string(modbus.OrderBADC)},
		{string(manifests.OrderCDAB), string(modbus.OrderCDAB)},
		{string(manifests.ParityNone), string(modbus.ParityNone)},
		{string(manifests.ParityEven), string(modbus.ParityEven)},
		{string(manifests.ParityOdd), string(modbus.ParityOdd)},
		{string(manifests.RS485None), string(modbus.RS485None)},
		{string(manifests.RS485Kernel), string(modbus.RS485Kernel)},
		{string(manifests.RS485RTS), string(modbus.RS485RTS)},
	}
	for _, p := range pairs {
		if p.manifest != p.driver {
			t.Errorf("manifest value %q is %q in its driver", p.manifest, p.driver)
		}
	}
	for _, d := range []struct {
		name   string
		m, drv any
	}{
		{"i2c timeout", manifests.DefaultTimeout, i2c.DefaultTimeout},
		{"modbus timeout", manifests.DefaultTimeout, modbus.DefaultTimeout},
		{"serial timeout", manifests.DefaultTimeout, serial.DefaultTimeout},
		{"baud", manifests.DefaultBaud, modbus.DefaultBaud},
		{"data bits", manifests.DefaultDataBits, modbus.DefaultDataBits},
	} {
		if d.m != d.drv {
			t.Errorf("default %s: manifest %v, driver %v", d.name, d.m, d.drv)
		}
	}
}

func TestRegistersCarryEveryField(t *testing.T) {
	r := manifests.Register{Name: "dimmer", Address: 1, Type: manifests.RegInt16, ByteOrder: manifests.LittleEndian, Scale: 0.5, Offset: -3, Writable: true}
	want := i2c.Register{Name: "dimmer", Address: 1, Type: i2c.RegInt16, ByteOrder: i2c.LittleEndian, Scale: 0.5, Offset: -3, Writable: true}
	if got := I2CRegisters([]manifests.Register{r})[0]; got != want {
		t.Errorf("I2CRegister = %+v, want %+v", got, want)
	}
	mr := manifests.ModbusRegister{Name: "label", Table: manifests.TableInput, Address: 7, Type: manifests.DataString, ByteOrder: manifests.OrderBADC, Bit: 2, Length: 4, Scale: 2, Offset: 1, Writable: true}
	mwant := modbus.Register{Name: "label", Table: modbus.TableInput, Address: 7, Type: modbus.DataString, ByteOrder: modbus.OrderBADC, Bit: 2, Length: 4, Scale: 2, Offset: 1, Writable: true}
	if got := ModbusRegisters([]manifests.ModbusRegister{mr})[0]; got != mwant {
		t.Errorf("ModbusRegister = %+v, want %+v", got, mwant)
	}
	s := manifests.SerialSettings{Port: "/dev/x", Baud: 19200, DataBits: 7, Parity: manifests.ParityEven, StopBits: 2, RS485: manifests.RS485RTS, FrameGap: 3}
	swant := modbus.SerialConfig{Port: "/dev/x", Baud: 19200, DataBits: 7, Parity: modbus.ParityEven, StopBits: 2, RS485: modbus.RS485RTS, FrameGap: 3}
	if got := Serial(s); got != swant {
		t.Errorf("Serial = %+v, want %+v", got, swant)
	}
	li := manifests.LineInstrument{Request: "W?", Terminator: "\n", Response: `(?P<w>\d+)`}
	if got := Instrument(li); got != (serial.InstrumentConfig{Request: "W?", Terminator: "\n", Response: `(?P<w>\d+)`}) {
		t.Errorf("Instrument = %+v", got)
	}
}
