package manifests

import (
	"regexp"
	"sync"
)

// ModelDHT22 is an Aosong DHT22 (AM2302) temperature and humidity sensor on
// a GPIO line, read through the kernel's dht11 IIO driver
// (dtoverlay=dht11,gpiopin=N), which times the single-wire protocol. It is
// on a gpio bus; pin is the line the overlay names and iio_device the IIO
// device the driver made ("iio:device0" unless another IIO driver came
// first). Channels: temperature (°C), humidity (%).
const ModelDHT22 Model = "dht22"

// DefaultIIODevice is the IIO device of a dht22 that names none: the first.
const DefaultIIODevice = "iio:device0"

// DefaultIIORoot is where the kernel lists the IIO devices.
const DefaultIIORoot = "/sys/bus/iio/devices"

var iioDeviceRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^iio:device[0-9]+$`) })

func declDHT22() ModelDecl {
	return ModelDecl{
		Model: ModelDHT22,
		Doc:   "Aosong DHT22/AM2302 temperature and humidity sensor, through the kernel's dht11 IIO driver",
		Bus:   BusGPIO,
		Channels: []ChannelDecl{
			{Name: "temperature", Unit: "°C", Min: -40, Max: 80, Sim: DefaultSimTemperature, Health: true},
			{Name: "humidity", Unit: "%", Min: 0, Max: 100, Sim: DefaultSimHumidity, Health: true},
		},
		Keys:     []string{"iio_device"},
		KeysNote: "only dht22 is read through an IIO device",
		decode:   decodeDHT22,
		// The kernel answers EIO for a bad checksum or a short frame
		// (nack, crc) and ETIMEDOUT for a sensor that never answered.
		Faults: []FaultKind{FaultDropout, FaultNACK, FaultStuck, FaultNoise, FaultImplausible, FaultTimeout, FaultCRC},
		Zone:   true,
		Sample: `- name: porch_sensor
  bus: gpio
  model: dht22
  pin: GPIO4                 # dtoverlay=dht11,gpiopin=4
  iio_device: "iio:device0"  # ls /sys/bus/iio/devices/*/name: the dht11
`,
	}
}

func decodeDHT22(o obj, dev *Device, own bool) {
	if own {
		dev.IIODevice = DefaultIIODevice
	}
	if s, ok := o.strOK("iio_device"); ok {
		if iioDeviceRE().MatchString(s) {
			dev.IIODevice = s
		} else {
			o.add("iio_device", ErrRange, ": %q (want the dht11 driver's IIO device, such as \"iio:device0\", as in %s)", s, DefaultIIORoot)
		}
	}
}
