package sim

import (
	"fmt"
	"time"

	"github.com/promcp/promcp-device/manifests"
)

// build is what New gathers while it adds devices, for the zones that tie
// them together.
type build struct {
	now   time.Time
	devs  map[string]manifests.Device // by device name
	pinOf map[string]*pinState        // by device name
	shts  map[string]*sht3x           // by device name
	bmes  map[string]*bme280          // by device name
	airs  map[string]*air             // declared models' twins, by device name
}

// adder adds the simulated counterpart of one device to the world.
type adder func(w *World, d manifests.Device, bl *build) error

// models is the table of simulated device models, the counterpart of
// capabilities' table: each model's adder lives in that model's file;
// adding a model is adding the file and a row here.
func models() map[manifests.Model]adder {
	return map[manifests.Model]adder{
		manifests.ModelSHT3x:      addSHT3x,
		manifests.ModelRegisters:  addRegisters,
		manifests.ModelModbus:     addModbusSlave,
		manifests.ModelSerialLine: addLineInstrument,
		manifests.ModelGPIOIn:     addPin,
		manifests.ModelGPIOOut:    addPin,
		manifests.ModelMQTT:       addMQTTDevice,
		manifests.ModelBME280:     addBME280,
		manifests.ModelBMP280:     addBME280,
		manifests.ModelADS1115:    addADS1x15,
		manifests.ModelADS1015:    addADS1x15,
		manifests.ModelINA219:     addINA219,
		manifests.ModelMCP23017:   addExpander,
		manifests.ModelPCF8574:    addExpander,
		manifests.ModelSHT4x:      addSHT4x,
		manifests.ModelSCD4x:      addSCD4x,
		manifests.ModelBH1750:     addBH1750,

		// 1-Wire, PWM and SPI through the kernel; pulses on a GPIO edge.
		manifests.ModelDS18B20:      addDS18B20,
		manifests.ModelPWM:          addPWM,
		manifests.ModelMCP3008:      addMCP3008,
		manifests.ModelPulseCounter: addPulseCounter,
		manifests.ModelDHT22:        addDHT22,
	}
}

// addI2C puts the device that mk makes at d's address on d's I2C bus,
// once the bus and the address are known to be fit.
func (w *World) addI2C(d manifests.Device, mk func() (device, error)) error {
	b, ok := w.buses[d.Bus]
	if !ok {
		return fmt.Errorf("sim: device %s: no i2c bus %q", d.Name, d.Bus)
	}
	if other, dup := b.names[d.Address]; dup {
		return fmt.Errorf("sim: device %s: address 0x%02x on bus %s is taken by %s", d.Name, d.Address, d.Bus, other)
	}
	dev, err := mk()
	if err != nil {
		return err
	}
	b.add(d.Address, d.Name, dev)
	return nil
}
