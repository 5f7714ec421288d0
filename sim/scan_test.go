package sim_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/sim"
)

// Every simulated I2C chip the project supports answers the identification
// a commissioning scan sends it (promcp-device scan --identify), at its
// address, as the real chip does; the scan writes nothing to the expanders.
func TestScanIdentifiesSimulatedChips(t *testing.T) {
	dev := func(name string, model manifests.Model, addr uint16) manifests.Device {
		return manifests.Device{Name: name, Bus: "i2c1", Model: model, Address: addr}
	}
	m := &manifests.Manifest{
		Gateway: "scan",
		Buses:   []manifests.Bus{{Name: "i2c1", Kind: manifests.BusI2C, Device: "1"}},
		Devices: []manifests.Device{
			dev("relays", manifests.ModelMCP23017, 0x20),
			dev("lamp", manifests.ModelPCF8574, 0x27),
			dev("panel", manifests.ModelPCF8574, 0x3F),
			dev("supply", manifests.ModelINA219, 0x40),
			dev("zone1", manifests.ModelSHT3x, 0x44),
			dev("zone2", manifests.ModelSHT3x, 0x45),
			dev("adc", manifests.ModelADS1115, 0x48),
			dev("weather", manifests.ModelBME280, 0x76),
			dev("baro", manifests.ModelBMP280, 0x77),
		},
	}
	m.Devices[3].ShuntOhms = manifests.DefaultShuntOhms
	w, _ := newWorld(t, m)
	bus := i2c.NewBus("i2c1", openBus(t, w, "i2c1"), 0, nil)
	found, err := i2c.ScanAddresses(t.Context(), bus, i2c.ScanOptions{Identify: true})
	if err != nil {
		t.Fatalf("ScanAddresses() = %v", err)
	}
	var got []string
	serials := map[uint32]bool{}
	for _, id := range found {
		got = append(got, fmt.Sprintf("0x%02x=%s", id.Addr, id.Model))
		if id.HasSerial {
			serials[id.Serial] = true
		}
	}
	want := "0x20=mcp23017 0x27=pcf8574 0x3f=pcf8574 0x40=ina219 0x44=sht3x 0x45=sht3x 0x48=ads1115 0x76=bme280 0x77=bmp280"
	if strings.Join(got, " ") != want {
		t.Errorf("ScanAddresses() found\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	if len(serials) != 2 {
		t.Errorf("SHT3x serials %v, want two different ones", serials)
	}
}

// A simulated onewire bus lists its DS18B20s in the master's
// w1_master_slaves, as the kernel does, and drops one that faults out.
func TestSimW1MasterSlaves(t *testing.T) {
	m := &manifests.Manifest{
		Gateway: "w1",
		Buses:   []manifests.Bus{{Name: "w1", Kind: manifests.BusOneWire}},
		Devices: []manifests.Device{
			{Name: "a", Bus: "w1", Model: manifests.ModelDS18B20, ROM: "28-0316a2795aff"},
			{Name: "b", Bus: "w1", Model: manifests.ModelDS18B20, ROM: "28-3c01d607d2e1"},
		},
	}
	w, _ := newWorld(t, m)
	dir := t.TempDir()
	fs, err := w.Sysfs(t.Context(), m.Buses[0], dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := fs.ReadFile(t.Context(), sim.W1Master+"/w1_master_slaves")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "28-0316a2795aff\n28-3c01d607d2e1\n"; got != want {
		t.Errorf("w1_master_slaves = %q, want %q", got, want)
	}
	if n, _ := os.ReadFile(filepath.Join(dir, sim.W1Master, "w1_master_slave_count")); string(n) != "2\n" {
		t.Errorf("w1_master_slave_count = %q, want 2", n)
	}
}
