// Command hilrun is the hardware-in-the-loop suite's driver (scripts/hil).
//
//	hilrun guest x86|arm BINARY MANIFEST   in the test virtual machine: serve MANIFEST with the
//	                                       real BINARY over stdio, call its tools as an MCP client,
//	                                       change the simulated hardware through the kernel's files
//	                                       and print one "HIL PASS|FAIL case: detail" line per check
//	hilrun sht3x-eeprom FILE               on the host: an at24c EEPROM image answering as an SHT3x
//	                                       at 23.5 °C and 45 %
//	hilrun rtu-slave MANIFEST SOCKET       on the host: answer as the manifest's simulated Modbus
//	                                       devices, in RTU, on the unix socket QEMU's ttyS1 is behind
//
// It exits 1 if a check failed.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/sim"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	switch {
	case len(args) == 4 && args[0] == "guest":
		return guest(args[1], args[2], args[3])
	case len(args) == 2 && args[0] == "sht3x-eeprom":
		if err := sht3xImage(args[1], 23.5, 45); err != nil {
			fmt.Fprintln(os.Stderr, "hilrun sht3x-eeprom:", err)
			return 1
		}
		return 0
	case len(args) == 3 && args[0] == "rtu-slave":
		if err := rtuSlave(args[1], args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "hilrun rtu-slave:", err)
			return 1
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "usage: hilrun guest x86|arm BINARY MANIFEST | hilrun sht3x-eeprom FILE | hilrun rtu-slave MANIFEST SOCKET")
	return 2
}

// rtuSlave serves the manifest's simulated Modbus devices in RTU on the
// unix socket at path, which QEMU listens on (-serial unix:PATH,server).
func rtuSlave(manifest, path string) error {
	m, err := manifests.Load(manifest)
	if err != nil {
		return err
	}
	w, err := sim.New(m, clock.NewScaled(1))
	if err != nil {
		return err
	}
	srv, err := w.AllModbus()
	if err != nil {
		return err
	}
	var conn net.Conn
	for range 600 { // QEMU creates the socket as it starts
		if conn, err = net.Dial("unix", path); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("connect to %s: %w", path, err)
	}
	defer conn.Close()
	return srv.ServeRTU(conn)
}

// suite holds the MCP session and the tally.
type suite struct {
	ctx          context.Context
	c            *client.Client
	pass, failed int
	key          int
}

func (s *suite) check(name string, ok bool, format string, args ...any) {
	verdict := "PASS"
	if ok {
		s.pass++
	} else {
		verdict = "FAIL"
		s.failed++
	}
	fmt.Printf("HIL %s %s: %s\n", verdict, name, fmt.Sprintf(format, args...))
}

// call calls a tool and returns its structured body and whether it is an
// error result.
func (s *suite) call(name string, args map[string]any) (map[string]any, bool) {
	ctx, cancel := context.WithTimeout(s.ctx, 60*time.Second)
	defer cancel()
	res, err := s.c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		return map[string]any{"call_error": err.Error()}, true
	}
	var body map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &body); err != nil || body == nil {
		return map[string]any{"call_error": fmt.Sprintf("no structured content: %v", err)}, true
	}
	return body, res.IsError
}

// read calls read_<capability> for a new measurement.
func (s *suite) read(capability string) map[string]any {
	body, _ := s.call("read_"+capability, map[string]any{"max_age_ms": 0})
	return body
}

// do calls a do_* tool with a fresh idempotency key.
func (s *suite) do(tool string, value any) map[string]any {
	s.key++
	body, _ := s.call(tool, map[string]any{"value": value, "idempotency_key": fmt.Sprintf("hil-%d", s.key)})
	return body
}

func guest(machine, binary, manifest string) int {
	ctx := context.Background()
	c := client.NewClient(transport.NewStdio(binary, nil, "serve", "--manifest", manifest, "--role", "admin", "--log-level", "warn"))
	if err := c.Start(ctx); err != nil {
		fmt.Printf("HIL FAIL serve: start %s: %v\n", binary, err)
		return 1
	}
	defer c.Close()
	ictx, cancel := context.WithTimeout(ctx, 120*time.Second)
	_, err := c.Initialize(ictx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "hilrun", Version: "1"}}})
	cancel()
	if err != nil {
		fmt.Printf("HIL FAIL serve: initialize: %v\n", err)
		return 1
	}
	s := &suite{ctx: ctx, c: c}
	switch machine {
	case "x86":
		s.gpio()
		s.pwm()
		s.onewire()
		s.modbus()
	case "arm":
		s.i2c()
	default:
		fmt.Printf("HIL FAIL %s: unknown machine\n", machine)
		return 2
	}
	fmt.Printf("HIL DONE %s pass=%d fail=%d\n", machine, s.pass, s.failed)
	if s.failed > 0 {
		return 1
	}
	return 0
}

// describe prints a body compactly for a check's detail.
func describe(body map[string]any) string {
	b, _ := json.Marshal(body)
	if len(b) > 300 {
		b = append(b[:300], "…"...)
	}
	return string(b)
}

func quality(body map[string]any) string { q, _ := body["quality"].(string); return q }

func fileText(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "error: " + err.Error()
	}
	return strings.TrimSpace(string(b))
}

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }
