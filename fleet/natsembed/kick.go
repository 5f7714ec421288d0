package natsembed

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
)

// KickLeaf closes an edge leaf server's links to the hub, so that the leaf
// relinks (nats-server tries the remote's next hub URL first), and returns
// the members it left ("name host:port"). It is shared.Config.Kick for an
// edge: a link that is up but carries no JetStream interest is restarted.
func KickLeaf(ns *server.Server) (string, error) {
	lz, err := ns.Leafz(nil)
	if err != nil {
		return "", fmt.Errorf("kick leaf link: %w", err)
	}
	var left []string
	var errs []error
	for _, l := range lz.Leafs {
		if err := ns.DisconnectClientByID(l.ID); err != nil {
			errs = append(errs, fmt.Errorf("kick leaf link %d to %s: %w", l.ID, l.Name, err))
			continue
		}
		left = append(left, l.Name+" "+net.JoinHostPort(l.IP, strconv.Itoa(l.Port)))
	}
	if len(left) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("kick leaf link: no link is up"))
	}
	return strings.Join(left, ", "), errors.Join(errs...)
}
