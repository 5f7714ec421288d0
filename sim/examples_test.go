package sim_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/promcp/promcp-device/driverconf"
	"github.com/promcp/promcp-device/drivers/gpio"
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/manifests/manifesttest"
)

// Every example manifest builds a world on which the real drivers read every
// device.
func TestExampleManifests(t *testing.T) {
	files, err := filepath.Glob("../manifests/examples/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example manifests: %v", err)
	}
	for _, file := range files {
		if manifests.IsCompanion(file) {
			continue // a policy file
		}
		if data, err := os.ReadFile(file); err == nil && manifests.IsScenario(data) {
			continue // a scenario, see TestExampleScenario
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			m := manifesttest.Load(t, file)
			w, clk := newWorld(t, m)
			buses := make(map[string]*i2c.Bus)
			for _, b := range m.Buses {
				if b.Kind == manifests.BusI2C {
					buses[b.Name] = i2c.NewBus(b.Name, openBus(t, w, b.Name), b.Timeout, nil)
				}
			}
			for _, d := range m.Devices {
				switch d.Model {
				case manifests.ModelSHT3x:
					if _, err := i2c.NewSHT3x(buses[d.Bus], d.Address, i2c.WithSleep(sleepOn(clk))).Sense(t.Context()); err != nil {
						t.Errorf("%s: Sense() = %v", d.Name, err)
					}
				case manifests.ModelRegisters:
					r := i2c.NewRegisters(buses[d.Bus], d.Address, d.Registers)
					for _, reg := range d.Registers {
						got, err := r.Read(t.Context(), reg.Name)
						if err != nil {
							t.Errorf("%s: Read(%s) = %v", d.Name, reg.Name, err)
						}
						if d.Sim != nil {
							if want, ok := d.Sim.Values[reg.Name]; ok && got != want {
								t.Errorf("%s: Read(%s) = %v, want the initial %v", d.Name, reg.Name, got, want)
							}
						}
					}
				case manifests.ModelGPIOOut:
					openOutput(t, w, d.Pin, d.ActiveLow)
				case manifests.ModelGPIOIn:
					p, err := w.Pin(t.Context(), d.Pin)
					if err != nil {
						t.Fatal(err)
					}
					if err := gpio.NewInput(d.Name, p, driverconf.Pull(d.Pull), d.ActiveLow, nil).Open(t.Context()); err != nil {
						t.Errorf("%s: Open() = %v", d.Name, err)
					}
				}
			}
		})
	}
}
