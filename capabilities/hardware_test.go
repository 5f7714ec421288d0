package capabilities_test

import (
	"context"
	"errors"
	"testing"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/manifests"
)

// A HardwareFuncs without a function fails with drivers.ErrUnavailable,
// as its doc says, for every bus kind: the gateway reports the device
// unavailable instead of panicking.
func TestHardwareFuncsWithoutAFunctionIsUnavailable(t *testing.T) {
	var hw capabilities.HardwareFuncs
	ctx := context.Background()
	bus := manifests.Bus{Name: "bus0"}
	dev := manifests.Device{Name: "dev0", Bus: "bus0"}
	opens := map[string]func() error{
		"OpenI2C":    func() error { _, err := hw.OpenI2C(ctx, bus); return err },
		"OpenPin":    func() error { _, err := hw.OpenPin(ctx, dev); return err },
		"DialTCP":    func() error { _, err := hw.DialTCP(ctx, bus); return err },
		"OpenSerial": func() error { _, err := hw.OpenSerial(ctx, bus); return err },
		"OpenSysfs":  func() error { _, err := hw.OpenSysfs(ctx, bus); return err },
		"OpenSPI":    func() error { _, err := hw.OpenSPI(ctx, bus); return err },
	}
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			if err := open(); !errors.Is(err, drivers.ErrUnavailable) {
				t.Errorf("%s with a nil function: err = %v, want drivers.ErrUnavailable", name, err)
			}
		})
	}
}
