//go:build nofleet

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/server"
)

// Built with -tags nofleet: no NATS client, no fleet registry, shared
// state or credentials commands. serve --fleet, hub, fleet and audit tail
// --fleet refuse, naming the tag.

// leftOutFleet names this feature in promcp-device version (features.go).
const leftOutFleet = "fleet (-tags nofleet)"

var errNoFleet = builtWithout("fleet", "nofleet")

// fleetNode is never made without the fleet.
type fleetNode struct{}

func (*fleetNode) Close() {}

func (f *serveFlags) connectFleet(context.Context, *manifests.Manifest, *gatewayOptions, *slog.Logger) (*fleetNode, error) {
	return nil, failErr(fmt.Errorf("--fleet %s: %w", f.fleetFile, errNoFleet), false)
}

func (*fleetNode) fleetStore(*gatewayOptions, *state, time.Duration) {}

func (f *serveFlags) joinFleet(context.Context, *fleetNode, *openedGateway, *server.Tokens, io.Writer, *slog.Logger) error {
	return nil
}

func cmdHub(c *cli) int   { return c.fail(errNoFleet) }
func cmdFleet(c *cli) int { return c.fail(errNoFleet) }

// auditFleetConfig keeps audit tail's --fleet flag, to refuse it clearly.
type auditFleetConfig struct{ fleet bool }

func auditFleetFlags(fs *flag.FlagSet) *auditFleetConfig {
	c := &auditFleetConfig{}
	fs.BoolVar(&c.fleet, "fleet", false, "tail: read the fleet's records from the hub (not in this binary: built with -tags nofleet)")
	for _, name := range []string{"nats", "hub-domain", "timeout", "identity", "ca"} {
		fs.Func(name, "tail --fleet (not in this binary: built with -tags nofleet)", func(string) error { c.fleet = true; return nil })
	}
	return c
}

func auditTailFleet(_ string, _ *auditFleetConfig, _, _ int, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "promcp-device audit: --fleet:", errNoFleet)
	return 1
}

// meshVersions are fleet.PhysMCPVersion and fleet.PromcpVersion, which a
// gateway reports alone too (TestMeshVersionsWithoutFleet keeps them
// equal).
func meshVersions() (physmcp, promcp string) { return "0.1", "0.2" }
