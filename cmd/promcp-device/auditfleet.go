//go:build !nofleet

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/fleet/shared"
	"github.com/promcp/promcp-device/fleet/trust"
)

// auditFleetConfig holds audit tail's --fleet flags.
type auditFleetConfig struct {
	fleet     bool
	url       string
	hubDomain string
	timeout   time.Duration
	identity  string // nkey seed file of a hub member (fleet init's DIR/hub1/hub1.nk)
	ca        string // the fleet CA the hub's certificate is checked against
}

func auditFleetFlags(fs *flag.FlagSet) *auditFleetConfig {
	c := &auditFleetConfig{}
	fs.BoolVar(&c.fleet, "fleet", false, "tail: read the fleet's records from the hub's FLEET_AUDIT stream (needs --nats)")
	fs.StringVar(&c.url, "nats", "", "tail --fleet: the `URL` of a hub node or of a gateway's leaf server (nats://host:4222)")
	fs.StringVar(&c.hubDomain, "hub-domain", shared.DefaultHubDomain, "tail --fleet: the hub's JetStream `DOMAIN`")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "tail --fleet: give up after `D`")
	fs.StringVar(&c.identity, "identity", "", "tail --fleet: a hub member's nkey seed `FILE` (fleet init's DIR/hub1/hub1.nk; mode 0600)")
	fs.StringVar(&c.ca, "ca", "", "tail --fleet: the fleet CA `FILE` the hub's TLS certificate is checked against (DIR/ca.crt)")
	return c
}

// auditTailFleet prints the last n records of FLEET_AUDIT, each led by the
// gateway that wrote it.
func auditTailFleet(sub string, c *auditFleetConfig, n, nargs int, stdout, stderr io.Writer) int {
	if sub != "tail" || c.url == "" || nargs > 0 {
		fmt.Fprintln(stderr, "promcp-device audit: --fleet goes with tail and --nats URL")
		fmt.Fprint(stderr, auditUsage)
		return 2
	}
	opts := []nats.Option{nats.Name("promcp-device audit tail --fleet"), nats.Timeout(c.timeout)}
	if c.identity != "" || c.ca != "" {
		kp, err := trust.ReadSeed(c.identity)
		if err != nil {
			fmt.Fprintf(stderr, "promcp-device audit tail --fleet: --identity: %v\n", err)
			return 1
		}
		pool, err := trust.ReadCA(c.ca, time.Now())
		if err != nil {
			fmt.Fprintf(stderr, "promcp-device audit tail --fleet: --ca: %v\n", err)
			return 1
		}
		opts = append(opts, trust.ClientOptions(strings.TrimSuffix(filepath.Base(c.identity), ".nk"), kp, pool)...)
	}
	nc, err := nats.Connect(c.url, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "promcp-device audit tail --fleet: connecting to %s: %v\n", c.url, err)
		return 1
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	recs, err := shared.TailFleet(ctx, nc, c.hubDomain, n, slog.New(slog.NewTextHandler(stderr, nil)))
	for _, r := range recs {
		fmt.Fprintf(stdout, "%s %s\n", audit.Escape(r.Gateway), audit.Format(r.Record))
	}
	if err != nil {
		fmt.Fprintln(stderr, "promcp-device audit tail --fleet:", err)
		return 1
	}
	return 0
}
