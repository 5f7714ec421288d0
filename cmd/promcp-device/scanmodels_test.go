package main

import (
	"slices"
	"testing"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// The scan knows every declared I2C model: each of its addresses has it
// among the candidates the scan names there (drivers/i2c's, and the
// declarations' through declaredAt), and the skeleton has its channels
// (from the declaration, with their units and ranges). Every chip the
// scan can identify is a declared model.
func TestScanKnowsEveryDeclaredModel(t *testing.T) {
	for _, d := range manifests.Declared() {
		if d.Bus != "" {
			continue // not on I2C
		}
		for _, a := range d.Addresses {
			if c := slices.Concat(i2c.CandidatesAt(a), declaredAt(a)); !slices.Contains(c, string(d.Model)) {
				t.Errorf("%s at 0x%02x: the scan's candidates there are %v", d.Model, a, c)
			}
		}
		chs := skChannels(string(d.Model))
		if len(d.Channels) == 0 {
			if d.Model == manifests.ModelADS1115 && len(chs) == 0 {
				t.Errorf("%s: the skeleton has no channels for its inputs", d.Model)
			}
			continue // the device names its channels (an ADC's inputs, an expander's pins)
		}
		if len(chs) != len(d.Channels) {
			t.Errorf("%s: the skeleton has channels %v, the declaration %v", d.Model, chs, d.ChannelNames())
		}
		for _, c := range chs {
			if c.unit == "" || c.what == "" || c.min >= c.max {
				t.Errorf("%s.%s: %+v", d.Model, c.name, c)
			}
		}
	}
	for a := uint16(i2c.ScanFirst); a <= i2c.ScanLast; a++ {
		for _, m := range i2c.CandidatesAt(a) {
			if d, ok := manifests.Decl(manifests.Model(m)); !ok || !slices.Contains(d.Addresses, a) {
				t.Errorf("the scan names %s at 0x%02x: not a declared model there", m, a)
			}
		}
	}
}
