package main

import (
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"go.bug.st/serial/enumerator"
)

// cmdPorts lists the serial ports with their USB vendor and product ids, so
// that an integrator can tell which /dev/ttyUSB* is the RS-485 adapter.
func cmdPorts(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ports", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ports, err := enumerator.GetDetailedPortsList()
	if err != nil {
		fmt.Fprintln(stderr, "promcp-device ports:", err)
		return 1
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
