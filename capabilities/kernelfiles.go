package capabilities

import (
	"context"

	"github.com/promcp/promcp-device/drivers/sysfs"
	"github.com/promcp/promcp-device/manifests"
)

// HostSysfs is the host's attribute files of bus b: its device directory,
// or the Pi's default for its kind.
func HostSysfs(_ context.Context, b manifests.Bus) (sysfs.FS, error) {
	root := b.Device
	if root == "" {
		switch b.Kind {
		case manifests.BusOneWire:
			root = manifests.DefaultW1Root
		case manifests.BusPWM:
			root = manifests.DefaultPWMChip
		case manifests.BusGPIO: // the IIO sensors on its lines (dht22)
			root = manifests.DefaultIIORoot
		}
	}
	return sysfs.Dir(root), nil
}

// openSysfs opens the attribute files of the bus device d is on.
func openSysfs(ctx context.Context, d manifests.Device, e env) (sysfs.FS, manifests.Bus, error) {
	return openExtension(ctx, d, e, kernelFiles, SysfsHardware.OpenSysfs)
}

// bus returns the declared bus called name.
func (e env) bus(name string) (manifests.Bus, bool) {
	b, ok := e.declared[name]
	return b, ok
}
