package main

import (
	"path/filepath"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/history"
	"github.com/promcp/promcp-device/history/boltseries"
	"github.com/promcp/promcp-device/manifests"
)

// historyFile is the on-disk history under --state.
const historyFile = "history.db"

// serveLive registers the capabilities' resources and history on the
// gateway; under --state the history is also kept in DIR/history.db,
// each capability for its history.retention.
func (g *openedGateway) serveLive(m *manifests.Manifest, stateDir string, clk clock.Clock) error {
	var store history.Store
	if stateDir != "" {
		keep := map[string]time.Duration{}
		for _, c := range m.Capabilities {
			keep[c.Name] = c.History.Keep()
		}
		st, err := boltseries.Open(filepath.Join(stateDir, historyFile), clk.Now, func(name string) time.Duration {
			if d, ok := keep[name]; ok {
				return d
			}
			return manifests.DefaultHistoryRetention
		})
		if err != nil {
			return err
		}
		g.historyDB, store = st, st
	}
	return g.gateway.ServeLive(gateway.LiveOptions{Gateway: m.Gateway, Store: store})
}

// closeLive stops the sampling of subscriptions and history and closes
// the history file.
func (g *openedGateway) closeLive() {
	if g.gateway != nil {
		g.gateway.CloseLive()
	}
	if g.historyDB != nil {
		g.historyDB.Close()
	}
}
