//go:build !natsserver && !nofleet

package main

import (
	"log/slog"

	"github.com/nats-io/nats.go"

	"github.com/promcp/promcp-device/manifests"
)

// embeddedServers refuses: the plain binary carries no nats-server (about
// 10 MB smaller); roles hub and edge need a build with -tags natsserver.
var embeddedServers embedded = noEmbedded{}

type noEmbedded struct{}

func (noEmbedded) hub(*manifests.Fleet, *slog.Logger) (*nats.Conn, func(), error) {
	return nil, nil, errNoEmbedded
}

func (noEmbedded) leaf(*manifests.Fleet, *slog.Logger) (*nats.Conn, leafLink, func(), error) {
	return nil, leafLink{}, nil, errNoEmbedded
}
