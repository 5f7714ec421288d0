//go:build natsserver && !nofleet

package main

import (
	"log/slog"

	"github.com/nats-io/nats.go"

	"github.com/promcp/promcp-device/fleet/natsembed"
	"github.com/promcp/promcp-device/manifests"
)

// embeddedServers runs nats-server inside the binary (built with
// -tags natsserver).
var embeddedServers embedded = natsEmbedded{}

type natsEmbedded struct{}

func (natsEmbedded) hub(f *manifests.Fleet, log *slog.Logger) (*nats.Conn, func(), error) {
	cfg := natsembed.HubFromFleet(f)
	ns, err := natsembed.StartHub(cfg, log)
	if err != nil {
		return nil, nil, err
	}
	nc, err := natsembed.ConnectSelf(ns, cfg)
	if err != nil {
		ns.Shutdown()
		return nil, nil, err
	}
	return nc, ns.Shutdown, nil
}

func (natsEmbedded) leaf(f *manifests.Fleet, log *slog.Logger) (*nats.Conn, leafLink, func(), error) {
	cfg := natsembed.LeafFromFleet(f)
	ns, err := natsembed.StartLeaf(cfg, log)
	if err != nil {
		return nil, leafLink{}, nil, err
	}
	nc, err := natsembed.Connect(ns, f.Gateway, natsembed.LeafSelfOptions(cfg)...)
	if err != nil {
		ns.Shutdown()
		return nil, leafLink{}, nil, err
	}
	link := leafLink{up: func() bool { return ns.NumLeafNodes() > 0 }, kick: func() (string, error) { return natsembed.KickLeaf(ns) }}
	return nc, link, ns.Shutdown, nil
}
