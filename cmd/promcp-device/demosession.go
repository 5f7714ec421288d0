package main

import (
	"fmt"
	"time"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/sitetest"
)

// hasGreenhouseTools says whether m serves every tool the greenhouse demo
// script calls.
func hasGreenhouseTools(m *manifests.Manifest) bool {
	want := map[string]bool{"read_temperature_zone1": true, "read_vent": true, "read_heater": true, "do_set_heater": true, "do_set_vent": true}
	for _, c := range m.Capabilities {
		delete(want, "read_"+c.Name)
		if c.Do != nil {
			delete(want, c.Do.Tool)
		}
	}
	return len(want) == 0
}

// demoSession runs, through the site test runner, the session
// sitetest.Session picks for m (can_do → read → do → read on its first
// actuator) and prints it. It exits 1 only when a call is not answered: a
// refusal is an answer worth showing.
func demoSession(c *cli, m *manifests.Manifest, path string, start time.Time) int {
	t := sitetest.Session(m, path, start)
	fmt.Fprintf(c.stdout, "promcp-device demo: %s on the simulator, %s: the proMCP pattern on its first actuator\n\n", m.Gateway, start.Format("Mon 2006-01-02 15:04 -07:00"))
	r := sitetest.Run(c.ctx, t, openSiteTest)
	sitetest.Report(c.stdout, []*sitetest.Result{r})
	if r.Err != nil {
		return c.fail(r.Err)
	}
	if r.Failed() > 0 {
		return 1
	}
	return 0
}
