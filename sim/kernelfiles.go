package sim

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/sysfs"
	"github.com/promcp/promcp-device/drivers/w1"
	"github.com/promcp/promcp-device/manifests"
)

// kernelFiles is the simulated state behind the kernel's attribute files:
// the DS18B20s of each onewire bus and the channels of each PWM chip.
// Guarded by World.mu.
type kernelFiles struct {
	ds18b20 map[string]*ds18b20           // by device name
	w1Bus   map[string][]*ds18b20         // by bus name
	pwm     map[string]map[int]*pwmOutput // by bus name, then channel
	spi     map[string]*mcp3008           // by bus name
	pulses  map[string]*pulseSource       // by pin name
	dht     map[string][]*dht22           // by bus name
}

func (w *World) files() *kernelFiles {
	if w.kf == nil {
		w.kf = &kernelFiles{ds18b20: map[string]*ds18b20{}, w1Bus: map[string][]*ds18b20{}, pwm: map[string]map[int]*pwmOutput{}, dht: map[string][]*dht22{}}
	}
	return w.kf
}

// ds18b20 is a simulated DS18B20: it reads the temperature of its zone.
type ds18b20 struct {
	name, rom string
	zone      *zone // nil: DefaultTemperature
}

// scratchpad is what a conversion now puts in the scratchpad, as the
// active fault distorts it; nil when the sensor is gone from the bus.
func (d *ds18b20) scratchpad(t float64, fs *faultState) []byte {
	switch {
	case fs.is(manifests.FaultNACK), fs.is(manifests.FaultDropout):
		return nil
	case fs.is(manifests.FaultStuck):
		if !fs.frozenValid {
			fs.frozen, fs.frozenValid = w1.Scratchpad(t), true
		}
		return fs.frozen
	case fs.is(manifests.FaultNoise):
		t += fs.spike()
	case fs.is(manifests.FaultImplausible):
		if fs.f.Value != nil {
			return w1.Scratchpad(*fs.f.Value)
		}
		// The power-on value: the conversion did not run.
		return []byte{0x50, 0x05, 0x4b, 0x46, 0x7f, 0xff, 0x0c, 0x10, 0x1c}
	case fs.is(manifests.FaultCRC):
		sp := w1.Scratchpad(t)
		sp[0] ^= 0x04 // a bit flipped on the wire
		return sp
	}
	return w1.Scratchpad(t)
}

// addDS18B20 adds a simulated DS18B20; a zone may drive its readings.
func addDS18B20(w *World, d manifests.Device, _ *build) error {
	kf := w.files()
	s := &ds18b20{name: d.Name, rom: d.ROM}
	kf.ds18b20[d.Name] = s
	kf.w1Bus[d.Bus] = append(kf.w1Bus[d.Bus], s)
	return nil
}

// pwmOutput is one simulated channel of a PWM chip: what the kernel holds
// for it.
type pwmOutput struct {
	name             string
	exported, enable bool
	period, duty     int64 // ns
}

func addPWM(w *World, d manifests.Device, _ *build) error {
	kf := w.files()
	if kf.pwm[d.Bus] == nil {
		kf.pwm[d.Bus] = map[int]*pwmOutput{}
	}
	kf.pwm[d.Bus][d.Channel] = &pwmOutput{name: d.Name}
	return nil
}

// PWM returns the duty cycle (0..1) and frequency (Hz) the simulated PWM
// channel the manifest calls device outputs now: 0 duty when disabled or
// unexported. ok is false for an unknown device.
func (w *World) PWM(device string) (duty, hz float64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ch := range w.files().pwm {
		for _, p := range ch {
			if p.name != device {
				continue
			}
			if p.period > 0 {
				hz = 1e9 / float64(p.period)
				if p.enable {
					duty = float64(p.duty) / float64(p.period)
				}
			}
			return duty, hz, true
		}
	}
	return 0, 0, false
}

// zoneSensor ties a DS18B20 to zone z, if name is one.
func (w *World) zoneSensor(name string, z *zone) bool {
	if w.kf == nil {
		return false
	}
	if s, ok := w.kf.ds18b20[name]; ok {
		s.zone = z
		return true
	}
	return false
}

// Sysfs serves the kernel's files of the onewire, pwm or gpio bus b in dir
// (a directory the caller made and removes): the w1 devices directory with
// a ROM-id directory per DS18B20, a PWM chip with export, npwm and a
// pwmN directory per exported channel, or the IIO devices of a gpio bus's
// DHT22s (their files rendered at each read, see dht22). Reading a w1_slave runs a
// conversion of the zone's temperature on the world's clock, as the
// kernel does; writing a PWM attribute is checked as the kernel checks it
// (EINVAL for a duty cycle longer than the period).
func (w *World) Sysfs(ctx context.Context, b manifests.Bus, dir string) (sysfs.FS, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	kf := w.files()
	t := &sysTree{w: w, bus: b.Name, kind: b.Kind, dir: sysfs.Dir(dir)}
	switch b.Kind {
	case manifests.BusOneWire:
		for _, s := range kf.w1Bus[b.Name] {
			if err := os.MkdirAll(filepath.Join(dir, s.rom), 0o755); err != nil {
				return nil, err
			}
		}
		t.renderLocked()
	case manifests.BusPWM:
		for name, data := range map[string]string{"export": "", "unexport": "", "npwm": "2\n"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				return nil, err
			}
		}
	case manifests.BusGPIO: // the IIO sensors on its lines
		if len(kf.dht[b.Name]) == 0 {
			return nil, fmt.Errorf("sim bus %s: %w: no IIO sensor on this gpio bus", b.Name, drivers.ErrUnavailable)
		}
	default:
		return nil, fmt.Errorf("sim bus %s: %w: not a onewire, pwm or gpio bus (with IIO sensors)", b.Name, drivers.ErrUnavailable)
	}
	return t, nil
}

// sysTree is the FS of one simulated bus: files on disk, rendered from the
// world before each read and applied to it after each write.
type sysTree struct {
	w    *World
	bus  string
	kind manifests.BusKind
	dir  sysfs.Dir
}

// W1Master is the bus master's directory in a simulated onewire bus's
// files, as the kernel's w1-gpio names the first; its w1_master_slaves
// lists the ROM ids on the bus, one a line.
const W1Master = "w1_bus_master1"

// renderLocked writes the w1_slave file of every DS18B20 of the bus as a
// conversion now gives it, removes the directory of one gone from the
// bus, and lists those present in the master's w1_master_slaves (with
// w1_master_slave_count), as the kernel does. w.mu is held.
func (t *sysTree) renderLocked() {
	now := t.w.advanceLocked()
	var present []string
	defer func() {
		d := filepath.Join(string(t.dir), W1Master)
		os.MkdirAll(d, 0o755)
		list := "not found.\n" // the kernel's text for an empty bus
		if len(present) > 0 {
			list = strings.Join(present, "\n") + "\n"
		}
		writeAtomic(filepath.Join(d, "w1_master_slaves"), []byte(list))
		writeAtomic(filepath.Join(d, "w1_master_slave_count"), []byte(strconv.Itoa(len(present))+"\n"))
	}()
	for _, s := range t.w.files().w1Bus[t.bus] {
		temp := DefaultTemperature
		if s.zone != nil {
			temp, _ = s.zone.sample(now)
		}
		sp := s.scratchpad(temp, t.w.faultLocked(s.name, now))
		d := filepath.Join(string(t.dir), s.rom)
		if sp == nil {
			os.RemoveAll(d)
			continue
		}
		os.MkdirAll(d, 0o755)
		writeAtomic(filepath.Join(d, "w1_slave"), w1.W1Slave(sp))
		present = append(present, s.rom)
	}
}

// writeAtomic replaces a file by renaming a complete one over it, so that
// a concurrent reader sees the old or the new content, never a part.
func writeAtomic(name string, data []byte) {
	tmp := name + ".new"
	if os.WriteFile(tmp, data, 0o644) == nil {
		os.Rename(tmp, name)
	}
}

// ReadFile implements sysfs.FS.
func (t *sysTree) ReadFile(ctx context.Context, name string) ([]byte, error) {
	if t.kind == manifests.BusOneWire {
		t.w.mu.Lock()
		t.renderLocked()
		fs := t.w.faultLocked(t.romDevice(name), t.w.clk.Now())
		t.w.mu.Unlock()
		sleep(fs.delay(manifests.DefaultTimeout))
	}
	if t.kind == manifests.BusGPIO {
		if err := t.readDHT(name); err != nil {
			return nil, drivers.Classify(err)
		}
	}
	return t.dir.ReadFile(ctx, name)
}

func (t *sysTree) romDevice(name string) string {
	rom, _, _ := strings.Cut(name, "/")
	for _, s := range t.w.files().w1Bus[t.bus] {
		if s.rom == rom {
			return s.name
		}
	}
	return ""
}

// WriteFile implements sysfs.FS: a PWM attribute is checked and applied as
// the kernel would, then written to disk.
func (t *sysTree) WriteFile(ctx context.Context, name string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if t.kind != manifests.BusPWM {
		return fmt.Errorf("write %s: %w", name, syscall.EACCES)
	}
	t.w.mu.Lock()
	defer t.w.mu.Unlock()
	v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, syscall.EINVAL)
	}
	chans := t.w.files().pwm[t.bus]
	dir, attr := path.Split(name)
	if dir == "" {
		ch, ok := chans[int(v)]
		switch {
		case attr != "export" && attr != "unexport":
			return fmt.Errorf("write %s: %w", name, syscall.EACCES)
		case !ok:
			return fmt.Errorf("write %s: %w", name, syscall.ENODEV)
		case attr == "export" && ch.exported:
			return fmt.Errorf("write %s: %w", name, syscall.EBUSY)
		case attr == "export":
			ch.exported = true
			d := filepath.Join(string(t.dir), "pwm"+strconv.Itoa(int(v)))
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			for a, s := range map[string]string{"period": "0\n", "duty_cycle": "0\n", "enable": "0\n", "polarity": "normal\n"} {
				if err := os.WriteFile(filepath.Join(d, a), []byte(s), 0o644); err != nil {
					return err
				}
			}
			return nil
		}
		ch.exported, ch.enable, ch.period, ch.duty = false, false, 0, 0
		return os.RemoveAll(filepath.Join(string(t.dir), "pwm"+strconv.Itoa(int(v))))
	}
	n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSuffix(dir, "/"), "pwm"))
	ch, ok := chans[n]
	if err != nil || !ok || !ch.exported {
		return fmt.Errorf("write %s: %w", name, syscall.ENOENT)
	}
	switch attr {
	case "period":
		if v < ch.duty || v <= 0 {
			return fmt.Errorf("write %s: %w", name, syscall.EINVAL)
		}
		ch.period = v
	case "duty_cycle":
		if v > ch.period || v < 0 {
			return fmt.Errorf("write %s: %w", name, syscall.EINVAL)
		}
		ch.duty = v
	case "enable":
		if (v != 0 && v != 1) || (v == 1 && ch.period == 0) {
			return fmt.Errorf("write %s: %w", name, syscall.EINVAL)
		}
		ch.enable = v == 1
	default:
		return fmt.Errorf("write %s: %w", name, syscall.EACCES)
	}
	return t.dir.WriteFile(ctx, name, fmt.Appendf(nil, "%d\n", v))
}
