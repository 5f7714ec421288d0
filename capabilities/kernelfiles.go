package capabilities

import (
	"context"
	"fmt"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/sysfs"
	"github.com/promcp/promcp-device/manifests"
)

// SysfsHardware is the Hardware of the buses reached through the kernel's
// attribute files (onewire, pwm). HardwareFuncs implements it with its
// Sysfs function.
type SysfsHardware interface {
	// OpenSysfs returns the attribute files of bus b.
	OpenSysfs(ctx context.Context, b manifests.Bus) (sysfs.FS, error)
}

// OpenSysfs implements SysfsHardware; a nil Sysfs fails with
// drivers.ErrUnavailable.
func (h HardwareFuncs) OpenSysfs(ctx context.Context, b manifests.Bus) (sysfs.FS, error) {
	if h.Sysfs == nil {
		return nil, fmt.Errorf("bus %s: %w: no kernel attribute files", b.Name, drivers.ErrUnavailable)
	}
	return h.Sysfs(ctx, b)
}

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
		}
	}
	return sysfs.Dir(root), nil
}

// openSysfs opens the attribute files of the bus device d is on.
func openSysfs(ctx context.Context, d manifests.Device, e env) (sysfs.FS, manifests.Bus, error) {
	b, ok := e.bus(d.Bus)
	if !ok {
		return nil, b, fmt.Errorf("bus %q is not declared", d.Bus)
	}
	h, ok := e.hw.(SysfsHardware)
	if !ok {
		return nil, b, fmt.Errorf("bus %s: %w: this hardware has no kernel attribute files", b.Name, drivers.ErrUnavailable)
	}
	fs, err := h.OpenSysfs(ctx, b)
	return fs, b, err
}

// bus returns the declared bus called name.
func (e env) bus(name string) (manifests.Bus, bool) {
	b, ok := e.declared[name]
	return b, ok
}
