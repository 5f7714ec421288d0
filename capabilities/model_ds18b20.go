package capabilities

import (
	"context"
	"fmt"

	"github.com/promcp/promcp-device/drivers/w1"
	"github.com/promcp/promcp-device/manifests"
)

// ds18b20Retries is how often a CRC failure is read again: the kernel
// runs a new conversion (750 ms at 12 bits) for each read.
const ds18b20Retries = 2

// openDS18B20 opens a DS18B20 on a onewire bus through the kernel's w1
// files. One channel: temperature (°C). Read-only. The power-on value
// (85 °C, no conversion ran) is a device error and degraded by default:
// the last good value is served, degraded, for up to max_stale, then (or
// with no good value yet) error; the manifest's on_device_error: error
// makes it error at once. A CRC failure after the retries is a crc error:
// like any bus error it serves the last good value as stale for up to
// max_stale and is error once no good value that recent remains. A sensor
// gone from the bus is unavailable (stale, then error the same way). Simulated by sim's ds18b20 behind the same files.
// The grounds of a reading are the nine scratchpad bytes.
func openDS18B20(ctx context.Context, d manifests.Device, e env) (*device, error) {
	fs, b, err := openSysfs(ctx, d, e)
	if err != nil {
		return nil, err
	}
	sensor := w1.NewDS18B20(fs, d.ROM, ds18b20Retries)
	root := b.Device
	if root == "" {
		root = manifests.DefaultW1Root
	}
	return &device{
		model: d.Model,
		source: perChannelOf(e.clock, sensor.Sense, func(s w1.Sample, _ string, _ manifests.ValueType) (any, []byte, error) {
			return s.Celsius, s.Scratchpad, nil
		}),
		writer:        noWriter(d.Model),
		onDeviceError: manifests.DeviceErrorIsDegraded,
		bind: func(string) Binding {
			return Binding{Driver: "w1", Address: d.ROM, Register: "temperature",
				RawForm:    fmt.Sprintf("ds18b20 scratchpad (9 bytes, CRC last) from %s/%s/w1_slave", root, d.ROM),
				Conversion: "int16 little-endian (bytes 0-1) / 16 °C, resolution from the configuration byte"}
		},
	}, nil
}
