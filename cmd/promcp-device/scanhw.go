package main

// Commissioning a new Pi: scan learns the Pi's own buses (I2C addresses
// and chips, 1-Wire ROM ids, GPIO lines) and writes a manifest skeleton
// of what it found. See drivers/i2c/identify.go for what is sent to an
// I2C address, and when.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	pi2c "periph.io/x/conn/v3/i2c"
	phost "periph.io/x/host/v3"
	"periph.io/x/host/v3/gpioioctl"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers/host"
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/drivers/sysfs"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/sim"
)

// hwScan are scan's flags for the Pi's own buses.
type hwScan struct {
	i2c, w1Dir, manifest, out string
	identify, onewire, gpio   bool
	simulate                  bool
	timeout                   time.Duration
}

// addHWScanFlags adds the flags of the hardware scan to c.
func addHWScanFlags(c *cli) *hwScan {
	hs := &hwScan{}
	c.StringVar(&hs.i2c, "i2c", "", "scan the I2C `BUS` (1 for /dev/i2c-1, or a periph bus name; with --sim, a bus of the manifest): a one-byte read of each address 0x08..0x77, nothing written")
	c.BoolVar(&hs.identify, "identify", false, "with I2C: also read the chip id of each answering address of a supported chip (a register-pointer write; the SHT3x's, SHT4x's and SCD4x's read-only queries where a bare read is not answered); never at an expander's address")
	c.BoolVar(&hs.onewire, "onewire", false, "list the 1-Wire ROM ids in --w1-dir (family 28: DS18B20)")
	c.StringVar(&hs.w1Dir, "w1-dir", "/sys/bus/w1/devices", "the kernel's 1-Wire devices `DIR`")
	c.BoolVar(&hs.gpio, "gpio", false, "list the lines of each gpiochip: number, name and whether in use")
	c.BoolVar(&hs.simulate, "sim", false, "scan the simulated buses of --manifest: all its I2C and onewire buses and GPIO pins, or those --i2c, --onewire and --gpio pick")
	c.StringVar(&hs.manifest, "manifest", "", "with --sim: the manifest `FILE` whose hardware is simulated")
	c.StringVar(&hs.out, "manifest-out", "", "write a manifest skeleton of the devices found to `FILE` (no actions: outputs are listed as reads)")
	c.StringVar(&hs.out, "o", "", "short for --manifest-out `FILE`")
	return hs
}

// wanted reports whether any hardware-scan flag was given.
func (hs *hwScan) wanted() bool {
	return hs.i2c != "" || hs.onewire || hs.gpio || hs.simulate || hs.out != "" || hs.identify
}

// scanI2CBus is one I2C bus to scan: its manifest name and device, and
// how to open it.
type scanI2CBus struct {
	name, device string
	open         func(context.Context) (pi2c.BusCloser, error)
}

// scanW1Bus is one onewire bus to list: its manifest name and device, and
// its files.
type scanW1Bus struct {
	name, device, dir string
	fs                sysfs.FS
}

// scanTargets are the buses a scan covers, on the host or the simulator.
type scanTargets struct {
	gateway string
	i2c     []scanI2CBus
	w1      []scanW1Bus
	gpio    func() ([]gpioLine, error) // nil: no GPIO listing
	cleanup func()
}

// gpioLine is one line of a gpiochip.
type gpioLine struct {
	chip, name, consumer string
	offset               int
}

// cmdScanHW runs the hardware scan and writes the skeleton.
func cmdScanHW(c *cli, hs *hwScan) int {
	if hs.simulate != (hs.manifest != "") {
		return c.usage("--sim and --manifest go together: --sim --manifest FILE scans the simulated hardware of FILE")
	}
	if !hs.simulate && hs.i2c == "" && !hs.onewire && !hs.gpio {
		return c.usage("say what to scan: --i2c BUS, --onewire, --gpio, or --sim --manifest FILE")
	}
	var t *scanTargets
	var err error
	if hs.simulate {
		t, err = hs.simTargets(c.ctx)
	} else {
		t, err = hs.hostTargets()
	}
	if err != nil {
		return c.fail(err)
	}
	defer t.cleanup()
	var sk skeleton
	code := 0
	for _, b := range t.i2c {
		found, opened, err := hs.scanI2C(c.ctx, b)
		if opened {
			printI2C(c, b, found, hs.identify)
			sk.addI2C(b, found)
		}
		if err != nil {
			fmt.Fprintf(c.stderr, "promcp-device scan: %v\n", err)
			code = 1
		}
	}
	for _, b := range t.w1 {
		roms, err := listW1(c.ctx, b)
		if err == nil || len(roms) > 0 {
			printW1(c, b, roms)
			sk.addW1(b, roms)
		}
		if err != nil {
			fmt.Fprintf(c.stderr, "promcp-device scan: %v\n", err)
			code = 1
		}
	}
	if t.gpio != nil {
		lines, err := t.gpio()
		if err == nil {
			printGPIO(c, lines)
			sk.gpio = lines
		}
		if err != nil {
			fmt.Fprintf(c.stderr, "promcp-device scan: gpio: %v\n", err)
			code = 1
		}
	}
	if hs.out != "" {
		if err := sk.write(hs.out, t.gateway); err != nil {
			return c.fail(err)
		}
		fmt.Fprintf(c.stdout, "wrote %s: %s, %s; check it with promcp-device lint %s\n", hs.out, plural(sk.nDevices, "device"), strings.Replace(plural(sk.nCaps, "capability"), "capabilitys", "capabilities", 1), hs.out)
	}
	return code
}

// declaredAt names the declared I2C models that answer at addr: the
// scan's candidates there besides those it can identify.
func declaredAt(addr uint16) []string {
	var ms []string
	for _, d := range manifests.Declared() {
		if d.Bus == "" && slices.Contains(d.Addresses, addr) {
			ms = append(ms, string(d.Model))
		}
	}
	return ms
}

// scanI2C opens b and scans its addresses.
// opened is false when the bus did not open.
func (hs *hwScan) scanI2C(ctx context.Context, b scanI2CBus) (found []i2c.Identity, opened bool, err error) {
	pb, err := b.open(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("i2c %s: %w", b.name, err)
	}
	defer pb.Close()
	found, err = i2c.ScanAddresses(ctx, i2c.NewBus(b.name, pb, hs.timeout, nil), i2c.ScanOptions{Identify: hs.identify, More: declaredAt})
	return found, true, err
}

// hostTargets are the host's buses the flags name.
func (hs *hwScan) hostTargets() (*scanTargets, error) {
	log := slog.New(slog.DiscardHandler)
	hn, _ := os.Hostname()
	t := &scanTargets{gateway: hn, cleanup: func() {}}
	if hs.i2c != "" {
		h := host.New(log)
		t.i2c = append(t.i2c, scanI2CBus{name: busName("i2c", hs.i2c), device: hs.i2c,
			open: func(ctx context.Context) (pi2c.BusCloser, error) { return h.I2C(ctx, hs.i2c) }})
	}
	if hs.onewire {
		dev := ""
		if hs.w1Dir != manifests.DefaultW1Root {
			dev = hs.w1Dir
		}
		t.w1 = append(t.w1, scanW1Bus{name: "w1", device: dev, dir: hs.w1Dir, fs: sysfs.Dir(hs.w1Dir)})
	}
	if hs.gpio {
		t.gpio = hostGPIOLines
	}
	return t, nil
}

// busName makes a manifest bus name of kind and a host device: "i2c1"
// for 1 and /dev/i2c-1.
func busName(kind, device string) string {
	var b strings.Builder
	b.WriteString(kind)
	for _, r := range strings.TrimPrefix(device, "/dev/"+kind+"-") {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// hostGPIOLines lists the lines of every gpiochip through the character
// device (periph's gpioioctl): read-only, no line is requested.
func hostGPIOLines() ([]gpioLine, error) {
	if _, err := phost.Init(); err != nil {
		return nil, fmt.Errorf("periph host init: %w", err)
	}
	if len(gpioioctl.Chips) == 0 {
		return nil, fmt.Errorf("no gpiochip found under /dev (is this a Pi, and may this user open /dev/gpiochip*?)")
	}
	var out []gpioLine
	for _, ch := range gpioioctl.Chips {
		for _, l := range ch.Lines() {
			out = append(out, gpioLine{chip: ch.Name(), offset: l.Number(), name: l.Name(), consumer: l.Consumer()})
		}
	}
	return out, nil
}

// simTargets stands up the simulated hardware of the manifest, as serve
// --sim does, and picks its buses.
func (hs *hwScan) simTargets(ctx context.Context) (*scanTargets, error) {
	m, err := manifests.Load(hs.manifest)
	if err != nil {
		return nil, err
	}
	scale := 0.0
	if m.Sim != nil {
		scale = m.Sim.TimeScale
	}
	w, err := sim.New(m, clock.NewScaled(scale))
	if err != nil {
		return nil, fmt.Errorf("simulator: %w", err)
	}
	dir, err := os.MkdirTemp("", "promcp-scan-*")
	if err != nil {
		return nil, fmt.Errorf("simulator: %w", err)
	}
	t := &scanTargets{gateway: m.Gateway + "-scan", cleanup: func() { os.RemoveAll(dir) }}
	all := hs.i2c == "" && !hs.onewire && !hs.gpio
	for _, b := range m.Buses {
		switch {
		case b.Kind == manifests.BusI2C && (all || hs.i2c == b.Name):
			t.i2c = append(t.i2c, scanI2CBus{name: b.Name, device: b.Device,
				open: func(ctx context.Context) (pi2c.BusCloser, error) { return w.I2C(ctx, b.Name) }})
		case b.Kind == manifests.BusOneWire && (all || hs.onewire):
			d := filepath.Join(dir, b.Name)
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.cleanup()
				return nil, fmt.Errorf("simulator: %w", err)
			}
			fs, err := w.Sysfs(ctx, b, d)
			if err != nil {
				t.cleanup()
				return nil, fmt.Errorf("simulator: onewire bus %s: %w", b.Name, err)
			}
			t.w1 = append(t.w1, scanW1Bus{name: b.Name, device: b.Device, dir: d, fs: fs})
		}
	}
	if hs.i2c != "" && len(t.i2c) == 0 {
		t.cleanup()
		return nil, fmt.Errorf("%s: no i2c bus named %q", hs.manifest, hs.i2c)
	}
	if hs.gpio || all && len(simGPIOLines(m)) > 0 {
		t.gpio = func() ([]gpioLine, error) { return simGPIOLines(m), nil }
	}
	return t, nil
}

// simGPIOLines are the simulated GPIO lines: the pins the manifest's
// devices use, each in use by its device.
func simGPIOLines(m *manifests.Manifest) []gpioLine {
	var out []gpioLine
	for _, d := range m.Devices {
		if d.Pin != "" {
			out = append(out, gpioLine{chip: "sim", offset: -1, name: d.Pin, consumer: d.Name})
		}
	}
	slices.SortFunc(out, func(a, b gpioLine) int { return strings.Compare(a.name, b.name) })
	return out
}

// listW1 reads the ROM ids of the bus's masters: each w1_bus_master*'s
// w1_master_slaves, one id a line ("not found." on an empty bus).
func listW1(ctx context.Context, b scanW1Bus) ([]string, error) {
	ents, err := os.ReadDir(b.dir)
	if err != nil {
		return nil, fmt.Errorf("1-Wire %s: %w (is the w1-gpio overlay loaded? see docs/devices.md)", b.dir, err)
	}
	var roms []string
	masters := 0
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "w1_bus_master") {
			continue
		}
		masters++
		data, err := b.fs.ReadFile(ctx, e.Name()+"/w1_master_slaves")
		if err != nil {
			return roms, fmt.Errorf("1-Wire %s/%s: %w", b.dir, e.Name(), err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if l = strings.TrimSpace(l); l != "" && l != "not found." {
				roms = append(roms, l)
			}
		}
	}
	if masters == 0 {
		return nil, fmt.Errorf("1-Wire %s: no w1_bus_master (is the w1-gpio overlay loaded? see docs/devices.md)", b.dir)
	}
	return roms, nil
}

// w1Model is the supported model of a ROM id's family, or "".
func w1Model(rom string) manifests.Model {
	if strings.HasPrefix(rom, "28-") {
		return manifests.ModelDS18B20
	}
	return ""
}

func printI2C(c *cli, b scanI2CBus, found []i2c.Identity, identify bool) {
	how := "one-byte reads, nothing written"
	if identify {
		how = "one-byte reads, and the id reads of supported chips"
	}
	fmt.Fprintf(c.stdout, "i2c %s: %d answered at 0x%02x..0x%02x (%s)\n", b.name, len(found), i2c.ScanFirst, i2c.ScanLast, how)
	for _, id := range found {
		fmt.Fprintf(c.stdout, "  %s\n", id)
	}
	if !identify {
		fmt.Fprintln(c.stdout, "  (an SHT3x, SHT4x or SCD4x does not answer a bare read: --identify finds one at 0x44..0x46 or 0x62)")
	}
}

func printW1(c *cli, b scanW1Bus, roms []string) {
	fmt.Fprintf(c.stdout, "1-Wire %s: %s\n", b.name, plural(len(roms), "device"))
	for _, r := range roms {
		what := "unsupported family " + strings.SplitN(r, "-", 2)[0]
		if m := w1Model(r); m != "" {
			what = string(m)
		}
		fmt.Fprintf(c.stdout, "  %s: %s\n", r, what)
	}
}

func printGPIO(c *cli, lines []gpioLine) {
	fmt.Fprintf(c.stdout, "gpio: %s\n", plural(len(lines), "line"))
	for _, l := range lines {
		use := "free"
		if l.consumer != "" {
			use = "in use by " + l.consumer
		}
		if l.offset >= 0 {
			fmt.Fprintf(c.stdout, "  %s line %d %s: %s\n", l.chip, l.offset, orDash(l.name), use)
		} else {
			fmt.Fprintf(c.stdout, "  %s %s: %s\n", l.chip, l.name, use)
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
