//go:build !nofleet

package main

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/promcp/promcp-device/fleet/trust"
)

const fleetUsage = `Usage:
  promcp-device fleet init DIR --hubs hub1,hub2,hub3 [--hosts NAME,IP,...] [--gateways gw1,gw2,...]
      create the fleet's CA, each hub's certificate and every node's nkey in DIR (a new directory, 0700)
  promcp-device fleet add-gateway DIR ID
      issue gateway ID's nkey (DIR/ID/) and add it to DIR/identities, which the hubs reload
  promcp-device fleet revoke DIR ID
      revoke node ID in DIR/identities: the hubs cut its links and refuse it from then on
  promcp-device fleet sim [--gateways 10,100,1000] [--hubs 1] [--queries 50] [--budget 500ms]
      measure a simulated fleet in this process (needs a build with -tags natsserver): real hubs,
      each simulated gateway its own TLS connection and nkey; fleet can_do p50/p99 for an intent
      every gateway matches and one that matches 10, heap per gateway, process RSS
`

// cmdFleet runs the fleet's credential commands: init, add-gateway,
// revoke. They work on files only; the hubs reload the identities file.
// It also runs the fleet simulator (sim).
func cmdFleet(c *cli) int {
	if len(c.args) == 0 || !slices.Contains([]string{"init", "add-gateway", "revoke", "sim"}, c.args[0]) {
		fmt.Fprint(c.stderr, fleetUsage)
		return 2
	}
	sub := c.sub()
	if c.args[0] == "sim" {
		return fleetSim(sub)
	}
	// DIR (and ID) come first, the flags after them: parse from the
	// first flag on.
	var pos []string
	for len(sub.args) > 0 && !strings.HasPrefix(sub.args[0], "-") {
		pos, sub.args = append(pos, sub.args[0]), sub.args[1:]
	}
	switch c.args[0] {
	case "init":
		return fleetInit(sub, pos)
	case "add-gateway":
		if !sub.parse() || len(pos)+sub.NArg() != 2 {
			return sub.usage("want DIR ID")
		}
		pos = append(pos, sub.Args()...)
		nf, err := trust.AddGateway(pos[0], pos[1])
		if err != nil {
			return sub.fail(err)
		}
		fmt.Fprintf(sub.stdout, "promcp-device: gateway %s added to %s; the hubs reload it.\n", pos[1], filepath.Join(pos[0], trust.IdentitiesFile))
		printNode(sub.stdout, pos[0], nf)
		return 0
	default:
		if !sub.parse() || len(pos)+sub.NArg() != 2 {
			return sub.usage("want DIR ID")
		}
		pos = append(pos, sub.Args()...)
		id, err := trust.Revoke(pos[0], pos[1])
		if err != nil {
			return sub.fail(err)
		}
		fmt.Fprintf(sub.stdout, "promcp-device: %s %s (nkey %s) revoked in %s.\n"+
			"Every hub reading this file cuts its links within seconds and refuses it from then on; copy the file to hubs on other machines.\n",
			id.Role, id.Node, id.Key, filepath.Join(pos[0], trust.IdentitiesFile))
		return 0
	}
}

func fleetInit(c *cli, pos []string) int {
	hubs := c.String("hubs", "", "the hub members' names, comma-separated (`NAMES`; required)")
	hosts := c.String("hosts", strings.Join(trust.DefaultHosts, ","), "DNS names and IPs the hubs are reached by (`LIST`), in every hub's certificate besides its name")
	gws := c.String("gateways", "", "gateways to issue credentials for now (`IDS`, comma-separated; more later with add-gateway)")
	if !c.parse() {
		return 2
	}
	pos = append(pos, c.Args()...)
	if len(pos) != 1 || *hubs == "" {
		return c.usage("want DIR and --hubs NAMES")
	}
	nodes, err := trust.Init(pos[0], trust.InitOptions{Hubs: commaList(*hubs), Hosts: commaList(*hosts), Gateways: commaList(*gws)})
	if err != nil {
		return c.fail(err)
	}
	fmt.Fprintf(c.stdout, "promcp-device: fleet created in %s: CA %s (keep %s off the nodes: it issues new gateways), identities %s.\n",
		pos[0], trust.CACertFile, trust.CAKeyFile, trust.IdentitiesFile)
	for _, nf := range nodes {
		printNode(c.stdout, pos[0], nf)
	}
	return 0
}

// printNode says what node nf's fleet file names, relative to dir.
func printNode(w io.Writer, dir string, nf trust.NodeFiles) {
	rel := func(p string) string {
		if r, err := filepath.Rel(dir, p); err == nil {
			return r
		}
		return p
	}
	fmt.Fprintf(w, "  %s (%s): identity: %s  ca: %s", nf.Node, nf.Role, rel(nf.Seed), rel(nf.CA))
	if nf.Role == trust.RoleHub {
		fmt.Fprintf(w, "  cert: %s  key: %s  identities: %s", rel(nf.Cert), rel(nf.Key), trust.IdentitiesFile)
	}
	fmt.Fprintln(w)
}

func commaList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
