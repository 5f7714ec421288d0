package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/promcp/promcp-device/drivers/iio"
	"github.com/promcp/promcp-device/manifests"
)

// dht22 is a simulated DHT22 behind the kernel's dht11 driver: a read of
// its files encodes the air as the sensor's 40-bit frame and decodes it as
// the kernel does. Faults give the kernel's errors: nack and crc a bad
// frame (EIO), timeout and dropout no answer (ETIMEDOUT). Guarded by
// World.mu.
type dht22 struct {
	name string
	dev  string // the IIO device, "iio:device0"
	a    *air
}

// files renders the dht11 driver's files for now into dir, or returns the
// kernel's error.
func (d *dht22) files(dir string, now time.Time, fs *faultState) error {
	vs := d.a.read(now, fs)
	f := iio.DHT22Encode(vs[0], vs[1])
	switch {
	case fs.is(manifests.FaultNACK):
		return fmt.Errorf("read %s: missed edges (fault nack): %w", d.dev, syscall.EIO)
	case fs.is(manifests.FaultTimeout), fs.is(manifests.FaultDropout):
		return fmt.Errorf("read %s: no answer (fault %s): %w", d.dev, fs.f.Kind, syscall.ETIMEDOUT)
	case fs.is(manifests.FaultCRC):
		f[4] ^= 0x01
	}
	if b := frozen(fs, f[:]); len(b) == 5 {
		f = [5]byte(b)
	}
	milliC, milliRH, err := iio.DHT22Decode(f)
	if err != nil {
		return fmt.Errorf("read %s: %w", d.dev, err)
	}
	p := filepath.Join(dir, d.dev)
	if err := os.MkdirAll(p, 0o755); err != nil {
		return err
	}
	writeAtomic(filepath.Join(p, iio.TempFile), []byte(strconv.FormatInt(milliC, 10)+"\n"))
	writeAtomic(filepath.Join(p, iio.HumidityFile), []byte(strconv.FormatInt(milliRH, 10)+"\n"))
	return nil
}

// readDHT renders the files of the DHT22 that name is under, then reads
// name. w.mu is not held.
func (t *sysTree) readDHT(name string) error {
	dev, _, _ := strings.Cut(name, "/")
	t.w.mu.Lock()
	var d *dht22
	for _, s := range t.w.files().dht[t.bus] {
		if s.dev == dev {
			d = s
		}
	}
	if d == nil {
		t.w.mu.Unlock()
		return nil // no such device: the file is missing
	}
	now := t.w.advanceLocked()
	fs := t.w.faultLocked(d.name, now)
	err := d.files(string(t.dir), now, fs)
	delay := fs.delay(manifests.DefaultTimeout)
	t.w.mu.Unlock()
	sleep(delay)
	return err
}

// addDHT22 adds a simulated DHT22 on its gpio bus's IIO files; a zone may
// drive its readings.
func addDHT22(w *World, d manifests.Device, bl *build) error {
	a, err := newAir(d)
	if err != nil {
		return err
	}
	kf := w.files()
	for _, o := range kf.dht[d.Bus] {
		if o.dev == d.IIODevice {
			return fmt.Errorf("sim: device %s: IIO device %s on bus %s is taken by %s", d.Name, d.IIODevice, d.Bus, o.name)
		}
	}
	kf.dht[d.Bus] = append(kf.dht[d.Bus], &dht22{name: d.Name, dev: d.IIODevice, a: a})
	bl.airs[d.Name] = a
	return nil
}
