package capabilities

import (
	"context"
	"fmt"

	"github.com/promcp/promcp-device/drivers/iio"
	"github.com/promcp/promcp-device/manifests"
)

// openDHT22 opens a DHT22 through the kernel's dht11 IIO driver: its
// in_temp_input (milli-°C) and in_humidityrelative_input (milli-%RH) under
// /sys/bus/iio/devices/<iio_device>. Channels: temperature (°C), humidity
// (%RH). Read-only. The kernel's EIO (a bad frame, common) is a crc error
// and its ETIMEDOUT a timeout: like any bus error they serve the last good
// value as stale for up to max_stale, then error; never a value of their
// own. Simulated by sim's dht22 behind the same files. The grounds of a
// reading are the two files' text.
func openDHT22(ctx context.Context, d manifests.Device, e env) (*device, error) {
	fs, _, err := openSysfs(ctx, d, e)
	if err != nil {
		return nil, err
	}
	sensor := iio.NewDHT(fs, d.IIODevice)
	files := fmt.Sprintf("%s/%s/{%s,%s}", manifests.DefaultIIORoot, d.IIODevice, iio.TempFile, iio.HumidityFile)
	chans := map[string]func(iio.DHTSample) float64{
		"temperature": func(s iio.DHTSample) float64 { return s.Celsius },
		"humidity":    func(s iio.DHTSample) float64 { return s.Humidity },
	}
	return &device{
		model: d.Model,
		source: perChannelOf(e.clock, sensor.Sense, func(s iio.DHTSample, channel string, _ manifests.ValueType) (any, []byte, error) {
			pick, ok := chans[channel]
			if !ok {
				return nil, nil, fmt.Errorf("dht22 has no channel %q (want temperature or humidity)", channel)
			}
			return pick(s), s.Raw, nil
		}),
		writer: noWriter(d.Model),
		bind: func(channel string) Binding {
			return Binding{Driver: "iio", Address: d.IIODevice, Register: channel,
				RawForm:    "the dht11 driver's files, decimal text: " + files,
				Conversion: "value / 1000 (the kernel's milli-°C and milli-%RH)"}
		},
	}, nil
}
