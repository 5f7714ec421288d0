package main

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/sim"
)

// cmdSim serves the manifest's simulated Modbus devices as standalone
// network devices, so that a gateway elsewhere (or mbpoll) talks to them as
// if they were real.
func cmdSim(c *cli) int {
	manifest := c.String("manifest", "", "manifest `FILE` whose simulated devices to serve (required)")
	tcpAddr := c.String("modbus-tcp", "", "serve every modbus device of the manifest over Modbus TCP on `ADDR` (host:port; a bare :port binds loopback)")
	timeScale := c.Float64("time-scale", 0, "simulated seconds per real second (overrides the manifest's sim.time_scale)")
	if !c.parse() {
		return 2
	}
	if *manifest == "" || *tcpAddr == "" || c.NArg() > 0 {
		return c.usage("--manifest FILE and --modbus-tcp ADDR are required")
	}
	m := c.load(*manifest)
	if m == nil {
		return 1
	}
	if !slices.ContainsFunc(m.Devices, func(d manifests.Device) bool { return d.Model == manifests.ModelModbus }) {
		fmt.Fprintf(c.stderr, "promcp-device sim: %s has no Modbus devices (model: modbus) to serve over --modbus-tcp; its other devices are simulated by serve --sim\n", *manifest)
		return 1
	}
	scale := *timeScale
	if scale <= 0 && m.Sim != nil {
		scale = m.Sim.TimeScale
	}
	w, err := sim.New(m, clock.NewScaled(scale))
	if err != nil {
		return c.fail(err)
	}
	srv, err := w.AllModbus()
	if err != nil {
		return c.fail(err)
	}
	addr := *tcpAddr
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(c.stderr, "promcp-device sim: --modbus-tcp %s: %v\n", addr, err)
		return 1
	}
	var units []string
	for _, d := range m.Devices {
		if d.Model == manifests.ModelModbus {
			units = append(units, fmt.Sprintf("%s=%d", d.Name, d.UnitID))
		}
	}
	slices.Sort(units)
	fmt.Fprintf(c.stdout, "promcp-device: simulating %d Modbus devices (%s) on %s (Modbus TCP)\n", len(units), strings.Join(units, ", "), ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTCP(ln) }()
	select {
	case err := <-errc:
		return c.fail(err)
	case <-c.ctx.Done():
	}
	srv.Close()
	return 0
}
