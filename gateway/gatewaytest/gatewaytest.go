// Package gatewaytest serves a manifest's gateway on the simulator for
// tests, in the periph …test style: a test names its manifest and what
// differs (the clock, the hardware seam, the policy, server options) and
// gets the world, the capability set, the MCP server and the gateway on
// it, all closed when the test ends; Connect adds an initialised
// in-process MCP client. The gateway's own tests and the fleet's build
// every gateway they run this way.
package gatewaytest

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/server/servertest"
	"github.com/promcp/promcp-device/sim"
	"github.com/promcp/promcp-device/simtest"
)

// Options say how Serve builds a gateway. The zero value serves the
// manifest over simtest.Hardware, the world on its real-time clock and the
// server on the system clock, with no policy.
type Options struct {
	// Clock runs the simulated world, the capability set and the server
	// (server.WithClock). Nil: the world's default, real time.
	Clock clock.Clock
	// Hardware is how the capability set reaches the world's devices.
	// Nil: simtest.Hardware.
	Hardware func(w *sim.World) capabilities.HardwareFuncs
	// Server are more server options, after the clock's.
	Server []server.Option
	// Gateway are the gateway's options (its policy, jobs, reserver).
	Gateway gateway.GatewayOptions
}

// Bench is a manifest's gateway served on the simulator.
type Bench struct {
	tb      testing.TB
	World   *sim.World
	Set     *capabilities.Set
	Server  *server.Server
	Gateway *gateway.Gateway
}

// Serve simulates m's devices, opens its capability set over them and
// serves the gateway on a new server, as o says.
func Serve(tb testing.TB, m *manifests.Manifest, o Options) *Bench {
	tb.Helper()
	w, set := Open(tb, m, o)
	sopts := o.Server
	if o.Clock != nil {
		sopts = append([]server.Option{server.WithClock(o.Clock)}, o.Server...)
	}
	srv, err := server.New("bench", "test", sopts...)
	if err != nil {
		tb.Fatal(err)
	}
	g, err := gateway.Serve(srv, set, o.Gateway)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		// Its jobs and dead-man timers stop: nothing is left running.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := g.Close(ctx); err != nil {
			tb.Errorf("closing the gateway: %v", err)
		}
	})
	return &Bench{tb: tb, World: w, Set: set, Server: srv, Gateway: g}
}

// Open simulates m's devices and opens its capability set over them, as
// o says (its Server and Gateway aside), closed when the test ends.
func Open(tb testing.TB, m *manifests.Manifest, o Options) (*sim.World, *capabilities.Set) {
	tb.Helper()
	w := simtest.World(tb, m, o.Clock)
	hw := simtest.Hardware(w)
	if o.Hardware != nil {
		hw = o.Hardware(w)
	}
	return w, simtest.Open(tb, m, hw, capabilities.Options{Clock: o.Clock})
}

// Connect returns an initialised in-process client of the bench's server.
func (b *Bench) Connect(opts ...client.ClientOption) *client.Client {
	b.tb.Helper()
	return Connect(b.tb, b.Server, opts...)
}

// Connect returns an initialised in-process MCP client of srv (a server or
// one of its surfaces) made with opts, closed when the test ends.
func Connect(tb testing.TB, srv *server.Server, opts ...client.ClientOption) *client.Client {
	tb.Helper()
	return servertest.Client(tb, srv, mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "test", Version: "1"}}, opts...)
}
