package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
	"github.com/promcp/promcp-device/manifests"
)

// cmdScan probes a Modbus line for responding unit ids and readable
// register ranges, gently and read-only; or, with --i2c, --onewire,
// --gpio or --sim, the Pi's own buses (cmdScanHW).
func cmdScan(c *cli) int {
	tcp := c.String("tcp", "", "scan a Modbus TCP device or gateway at `ADDR` (host:port)")
	rtuTCP := c.String("rtu-tcp", "", "scan RTU over TCP (a serial device server) at `ADDR`")
	port := c.String("port", "", "scan a Modbus RTU line on serial `PORT` (/dev/ttyUSB0)")
	baud := c.Int("baud", manifests.DefaultBaud, "with --port: bits per second")
	parity := c.String("parity", "none", "with --port: none, even or odd")
	stopBits := c.Int("stop-bits", 1, "with --port: 1 or 2")
	unitsFlag := c.String("units", "1-247", "unit ids to probe: `LIST` such as 1-10,17")
	first := c.Uint("first", 0, "first 0-based address probed in each table")
	count := c.Uint("count", 16, "addresses probed in each table")
	timeout := c.Duration("timeout", 200*time.Millisecond, "how long to wait for each answer")
	pause := c.Duration("pause", 20*time.Millisecond, "silence between probes")
	values := c.Bool("values", false, "read and print the values found in each readable range (registers as unsigned 16-bit numbers and hex, coils and inputs as 0/1)")
	hs := addHWScanFlags(c)
	if !c.parse() {
		return 2
	}
	if hs.wanted() {
		if *tcp != "" || *rtuTCP != "" || *port != "" {
			return c.usage("scan either a Modbus line (--tcp, --rtu-tcp, --port) or the Pi's buses (--i2c, --onewire, --gpio, --sim), not both")
		}
		hs.timeout = *timeout
		return cmdScanHW(c, hs)
	}
	given := 0
	for _, s := range []string{*tcp, *rtuTCP, *port} {
		if s != "" {
			given++
		}
	}
	units, err := parseUnits(*unitsFlag)
	if given != 1 || err != nil || *count == 0 || *first+*count > 65536 {
		fmt.Fprintln(c.stderr, "promcp-device scan: give exactly one of --tcp, --rtu-tcp or --port, a valid --units list and --first/--count within 0..65535 (a Modbus line); or --i2c BUS, --onewire, --gpio, --sim --manifest FILE (a Pi's own buses)")
		if err != nil {
			fmt.Fprintln(c.stderr, err)
		}
		return 2
	}
	cfg := modbus.Config{Name: "scan", Timeout: *timeout, Retries: 0, BreakerThreshold: 1 << 30}
	if addr := *tcp + *rtuTCP; addr != "" {
		if err := reachable(c.ctx, addr, *timeout); err != nil {
			fmt.Fprintf(c.stderr, "promcp-device scan: cannot reach %s: %v\n", addr, err)
			return 1
		}
	}
	var line *modbus.Line
	var what string
	switch {
	case *tcp != "":
		line, what = modbus.NewTCP(cfg, modbus.DialerTCP(*tcp), nil), "Modbus TCP "+*tcp
	case *rtuTCP != "":
		line, what = modbus.NewRTUOverTCP(cfg, modbus.DialerTCP(*rtuTCP), nil), "RTU over TCP "+*rtuTCP
	default:
		s := modbusconf.SerialConfig{Port: *port, Baud: *baud, DataBits: 8, Parity: modbusconf.Parity(*parity), StopBits: *stopBits}
		p, err := modbus.OpenPort(c.ctx, s)
		if err != nil {
			return c.fail(err)
		}
		line, what = modbus.NewRTU(cfg, p, modbus.FrameGap(*baud), false, nil), fmt.Sprintf("RTU %s at %d baud", *port, *baud)
	}
	defer line.Close()
	fmt.Fprintf(c.stdout, "scanning %s: %d unit ids, addresses %d..%d of each table, read-only\n", what, len(units), *first, *first+*count-1)
	found, err := line.Scan(c.ctx, modbus.ScanConfig{Units: units, First: uint16(*first), Count: uint16(*count), Pause: *pause})
	return reportScan(c.ctx, c.stdout, c.stderr, line, found, err, *values, what, *unitsFlag)
}

// reportScan prints what a scan found (with values, the values of each
// range) and returns scan's exit code: 1 when it failed or no unit answered.
func reportScan(ctx context.Context, stdout, stderr io.Writer, line *modbus.Line, found []modbus.UnitReport, err error, values bool, what, units string) int {
	for _, u := range found {
		var rs []string
		for _, r := range u.Ranges {
			rs = append(rs, r.String())
		}
		if len(rs) == 0 {
			rs = []string{"nothing readable in the probed range"}
		}
		fmt.Fprintf(stdout, "unit %d: %s\n", u.Unit, strings.Join(rs, "; "))
		if values {
			printValues(ctx, stdout, line.Unit(u.Unit), u.Ranges)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "promcp-device scan:", err)
		return 1
	}
	if len(found) == 0 {
		fmt.Fprintln(stdout, "no unit answered")
		fmt.Fprintf(stderr, "promcp-device scan: no unit answered on %s (units %s): check the wiring, the unit ids, the baud rate and parity\n", what, units)
		return 1
	}
	return 0
}

// parseUnits parses "1-10,17" into unit ids.
func parseUnits(s string) ([]uint8, error) {
	var out []uint8
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b > 255 || a > b {
			return nil, fmt.Errorf("--units: %q is not a unit id or range within 0..255", part)
		}
		for u := a; u <= b; u++ {
			out = append(out, uint8(u))
		}
	}
	return out, nil
}

// reachable dials addr once, to tell "nothing listens there" from "no
// unit answered".
func reachable(ctx context.Context, addr string, timeout time.Duration) error {
	d := net.Dialer{Timeout: max(timeout, time.Second)}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// printValues reads each range once (at most 125 registers or 2000 bits a
// request) and prints its values, one line a range.
func printValues(ctx context.Context, w io.Writer, u *modbus.Unit, ranges []modbus.Range) {
	for _, r := range ranges {
		var vals []string
		for first := int(r.First); first <= int(r.Last); {
			n := min(int(r.Last)-first+1, 125)
			switch r.Table {
			case modbusconf.TableHolding, modbusconf.TableInput:
				b, err := u.ReadRegisters(ctx, r.Table, uint16(first), uint16(n))
				if err != nil {
					vals = append(vals, "error: "+err.Error())
					break
				}
				for i := 0; i+1 < len(b); i += 2 {
					v := uint16(b[i])<<8 | uint16(b[i+1])
					vals = append(vals, fmt.Sprintf("%d=%d (0x%04x)", first+i/2, v, v))
				}
			default:
				bits, err := u.ReadBits(ctx, r.Table, uint16(first), uint16(n))
				if err != nil {
					vals = append(vals, "error: "+err.Error())
					break
				}
				for i, on := range bits {
					v := 0
					if on {
						v = 1
					}
					vals = append(vals, fmt.Sprintf("%d=%d", first+i, v))
				}
			}
			first += n
		}
		fmt.Fprintf(w, "  %s: %s\n", r, strings.Join(vals, " "))
	}
}
