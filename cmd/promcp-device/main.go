// Command promcp-device serves devices declared in a manifest as proMCP
// tools over MCP (stdio or streamable HTTP), on real hardware or on the
// built-in simulator.
//
// Usage:
//
//	promcp-device serve --manifest FILE [--sim [--time-scale N] [--scenario FILE]] [--http ADDR] [--role ROLE]
//	                    [--state DIR] [--tokens FILE] [--read-only]
//	promcp-device serve ... --fleet FILE
//	promcp-device hub --fleet FILE [--replicas N] [--tokens FILE]
//	promcp-device audit verify|checkpoint|tail --state DIR
//	promcp-device token add|hash|list|revoke [--tokens FILE] [--name NAME] [--role ROLE]
//	promcp-device console-user add|remove|list [NAME] --file FILE [--role ROLE]
//	promcp-device lint FILE...
//	promcp-device lint [--json] [--strict] [--call-reads] [--manifest FILE] (TOOLS.json | --url URL [--header K:V] | -- CMD ARGS...)
//	promcp-device tools --manifest FILE [--json | --check URL]
//	promcp-device demo [--manifest FILE]
//	promcp-device test [--junit FILE] [--update] FILE...
//	promcp-device approve --approval-key FILE --manifest FILE --tool TOOL --value JSON --key KEY
//	promcp-device override --approval-key FILE --manifest FILE --tool TOOL [--ttl D] [--by NAME]
//	promcp-device sim --manifest FILE --modbus-tcp ADDR
//	promcp-device ports
//	promcp-device scan (--tcp ADDR | --rtu-tcp ADDR | --port PORT) [--units 1-10]
//	promcp-device scan [--i2c BUS] [--identify] [--onewire] [--gpio] [--sim --manifest FILE] [-o FILE]
//	promcp-device bench (--url URL | --serve FILE) [--sessions N] [--duration D] [--protocol V] [--call TOOL[:JSON]]...
//	promcp-device read --manifest FILE [CAPABILITY...] [--sim] [--json]
//	promcp-device do --dry-run --manifest FILE [--sim] [--role ROLE] [--json] TOOL VALUE
//	promcp-device docs [--dir DIR] [--check]
//	promcp-device version
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	// Zone data in the binary: a Pi image without /usr/share/zoneinfo
	// still loads the policy's time zones (about 400 KB).
	_ "time/tzdata"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `promcp-device: devices behind the Model Context Protocol, the proMCP way.

Usage:
  promcp-device serve --manifest FILE [--sim] [--http ADDR] [--state DIR] [--tokens FILE]
                                                             serve the manifest's tools
  promcp-device serve ... --fleet FILE                       serve, and join the fleet FILE describes (role edge or thin-edge)
  promcp-device hub --fleet FILE                             run a hub member and the fleet endpoint (build with -tags natsserver)
  promcp-device fleet init|add-gateway|revoke DIR ...        create the fleet's CA, certificates and node keys; add or revoke a gateway
  promcp-device audit verify|checkpoint|tail --state DIR     check, checkpoint or show the audit log
  promcp-device token add|hash|list|revoke                   make, list and revoke bearer tokens for --tokens
  promcp-device console-user add|remove|list [NAME] --file F  the operator console's accounts (people, not MCP tokens)
  promcp-device lint FILE...                                 check manifests and fault scenarios; exit 1 on problems
  promcp-device lint [--strict] [--call-reads] (TOOLS.json | --url URL | -- CMD ARGS...)
                                                             check any MCP server's tools against proMCP; exit 1 on findings, 2 if unreachable
  promcp-device tools --manifest FILE [--json]               list the tools a manifest serves
  promcp-device convert [--out DIR] physmcp.manifest.yml     write a PhysMCP manifest and policy in this format
  promcp-device sim --manifest FILE --modbus-tcp ADDR        serve the manifest's simulated Modbus devices on the network
  promcp-device ports                                        list serial ports with USB vendor:product ids
  promcp-device scan (--tcp ADDR|--rtu-tcp ADDR|--port PORT) find Modbus units and readable registers (read-only)
  promcp-device scan [--i2c BUS] [--identify] [--onewire] [--gpio] [--sim --manifest FILE] [-o FILE]
                                                             list what answers on a Pi's I2C bus (read-only; --identify reads chip ids),
                                                             its 1-Wire ROM ids and GPIO lines; -o writes a manifest skeleton of it
  promcp-device demo                                         walk can_do → read → do → read on the simulator, then the refusals
  promcp-device test [--junit FILE] [--update] FILE...       run site tests on the simulator; exit 1 on failures, 2 if one cannot load
  promcp-device approve --approval-key FILE --manifest FILE --tool T --value V --key K [--gateway-id ID]
                                                             issue a one-time approval of one action
  promcp-device override --approval-key FILE --manifest FILE --tool T [--ttl D] [--by NAME]
                                                             issue an emergency override of one tool (the policy's emergency block)
  promcp-device bench (--url URL|--serve FILE) [--sessions N] [--duration D] [--protocol V] [--call TOOL[:JSON]]
                                                             load an MCP server on loopback: calls/s, p50/p90/p99, server CPU per call, peak RSS
  promcp-device read --manifest FILE [CAPABILITY...] [--sim] [--json]
                                                             read each capability once and print its value and quality
  promcp-device do --dry-run --manifest FILE TOOL VALUE      say what the action would do now (policy, register); write nothing
  promcp-device docs [--dir DIR] [--check]                  write (or check) docs/manifest-reference.md and docs/schema/*.json from the code
  promcp-device version                                      print the version, commit and build date

Run "promcp-device COMMAND -h" for a command's flags.
`

// commands are the subcommands by name.
func commands() map[string]func(*cli) int {
	return map[string]func(*cli) int{
		"serve": cmdServe, "hub": cmdHub, "audit": cmdAudit, "token": cmdToken, "console-user": cmdConsoleUser, "lint": cmdLint, "tools": cmdTools,
		"convert": cmdConvert, "approve": cmdApprove, "override": cmdOverride, "demo": cmdDemo, "test": cmdTest, "sim": cmdSim, "ports": cmdPorts,
		"scan": cmdScan, "bench": cmdBench, "fleet": cmdFleet, "read": cmdRead, "do": cmdDo,
		"docs": cmdDocs, "version": cmdVersion, "--version": cmdVersion, "-version": cmdVersion,
	}
}

// run is the whole program; it returns the exit code: 0 success, 1 the
// work failed (bad manifest, bus unavailable), 2 bad usage.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "promcp-device: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	return cmd(newCLI(ctx, args[0], args[1:], stdin, stdout, stderr))
}
