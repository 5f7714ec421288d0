package main

import (
	"fmt"
	"text/tabwriter"

	"go.bug.st/serial/enumerator"
)

// cmdPorts lists the serial ports with their USB vendor and product ids, so
// that an integrator can tell which /dev/ttyUSB* is the RS-485 adapter.
func cmdPorts(c *cli) int {
	if !c.parse() {
		return 2
	}
	stdout := c.stdout
	ports, err := enumerator.GetDetailedPortsList()
	if err != nil {
		return c.fail(err)
	}
	if len(ports) == 0 {
		fmt.Fprintln(stdout, "no serial ports found")
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PORT\tUSB VID:PID\tSERIAL\tPRODUCT")
	for _, p := range ports {
		id := "-"
		if p.IsUSB {
			id = p.VID + ":" + p.PID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, id, dash(p.SerialNumber), dash(p.Product))
	}
	tw.Flush()
	return 0
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
