package natsembed

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/promcp/promcp-device/fleet/trust"
)

// HubTrust is what a hub member proves itself with and whom it lets in:
// its TLS certificate (client, leaf and cluster ports), the fleet CA
// (routes must present a certificate it signed: only hub members hold
// one), its own nkey (its in-process connection) and the identities file
// (every node's public nkey, role and revocation).
type HubTrust struct {
	Cert tls.Certificate
	CA   *x509.CertPool
	Key  nkeys.KeyPair
	// IdentitiesFile is read at start and watched: a change (a gateway
	// added or revoked) reloads the server's users, and a revoked node's
	// live connections are cut.
	IdentitiesFile string
	// Watch is how often the identities file is checked (1 s when 0).
	Watch time.Duration
}

// NodeTrust is what a gateway proves itself with and how it checks the
// hub: its nkey and the fleet CA.
type NodeTrust struct {
	Key nkeys.KeyPair
	CA  *x509.CertPool
}

// nkeyUsers are the server's users: the hub's own key with every right,
// hubs with every right, gateways with trust.GatewayPermissions; revoked
// identities are left out (the server refuses their key).
func nkeyUsers(ids []trust.Identity, self nkeys.KeyPair) []*server.NkeyUser {
	pub, _ := self.PublicKey()
	users := []*server.NkeyUser{{Nkey: pub, AllowedConnectionTypes: types(jwt.ConnectionTypeStandard)}}
	for _, id := range ids {
		if id.Revoked || id.Key == pub {
			continue
		}
		u := &server.NkeyUser{Nkey: id.Key, AllowedConnectionTypes: types(jwt.ConnectionTypeStandard, jwt.ConnectionTypeLeafnode)}
		if id.Role == trust.RoleGateway {
			u.Permissions = serverPermissions(trust.GatewayPermissions(id.Node))
		}
		users = append(users, u)
	}
	return users
}

func types(ts ...string) map[string]struct{} {
	m := map[string]struct{}{}
	for _, t := range ts {
		m[t] = struct{}{}
	}
	return m
}

func serverPermissions(p trust.Permissions) *server.Permissions {
	sp := &server.Permissions{Publish: &server.SubjectPermission{Allow: p.Publish},
		Subscribe: &server.SubjectPermission{Allow: p.Subscribe}}
	if p.Responses {
		sp.Response = &server.ResponsePermission{MaxMsgs: 1, Expires: time.Minute}
	}
	return sp
}

// hubTrust sets a hub's TLS and users from t.
func hubTrust(opts *server.Options, t *HubTrust, names *nodeNames) error {
	ids, err := trust.ReadIdentities(t.IdentitiesFile)
	if err != nil {
		return fmt.Errorf("identities: %w", err)
	}
	names.set(ids)
	opts.TLSConfig, opts.TLSTimeout = trust.ServerTLS(t.Cert), 5
	opts.LeafNode.TLSConfig, opts.LeafNode.TLSTimeout = trust.ServerTLS(t.Cert), 5
	if opts.Cluster.Port != 0 || opts.Cluster.Name != "" {
		tc := trust.ClusterTLS(t.Cert, t.CA)
		// A route's certificate must name a hub member that identities
		// lists and has not revoked (checked on every new route).
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("route without a certificate")
			}
			if cn := cs.PeerCertificates[0].Subject.CommonName; !names.liveHub(cn) {
				return fmt.Errorf("route certificate %q: not a live hub member in the identities file", cn)
			}
			return nil
		}
		opts.Cluster.TLSConfig, opts.Cluster.TLSTimeout = tc, 5
	}
	opts.Nkeys = nkeyUsers(ids, t.Key)
	return nil
}

// watchIdentities reloads the hub's users when the identities file
// changes, until the server shuts down: users revoked meanwhile are
// refused from then on, and their live links (client and leaf) cut.
//
// cur is the server's options in force (the ones it was started with,
// then those of the last reload).
func watchIdentities(ns *server.Server, cur *server.Options, t *HubTrust, names *nodeNames, log *slog.Logger) {
	every := t.Watch
	if every <= 0 {
		every = time.Second
	}
	done := make(chan struct{})
	go func() { ns.WaitForShutdown(); close(done) }()
	last, _ := os.ReadFile(t.IdentitiesFile)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		data, err := os.ReadFile(t.IdentitiesFile)
		if err != nil || bytes.Equal(data, last) {
			continue
		}
		last = data
		ids, err := trust.ParseIdentities(t.IdentitiesFile, data)
		if err != nil {
			log.Error("fleet identities: not reloaded (the previous ones stay in force)", "err", err)
			continue
		}
		next, err := reloadIdentities(ns, cur, ids, t, names)
		if next != nil {
			cur = next
		}
		if err != nil {
			log.Error("fleet identities: reload failed", "err", err)
			continue
		}
		log.Info("fleet identities reloaded", "file", t.IdentitiesFile, "nodes", len(ids))
	}
}

// reloadIdentities applies ids to ns: its users, then the leaf links of
// nodes no longer live cut (the server rechecks client connections on
// reload, not leaf links).
func reloadIdentities(ns *server.Server, cur *server.Options, ids []trust.Identity, t *HubTrust, names *nodeNames) (*server.Options, error) {
	// The options in force with only the users changed: the same TLS
	// configurations (a copy would differ in its internal state and read
	// as a change of every port's TLS), and a slice of routes of its own,
	// since the reload sorts them in place.
	opts := cur.Clone()
	opts.TLSConfig, opts.LeafNode.TLSConfig, opts.Cluster.TLSConfig = cur.TLSConfig, cur.LeafNode.TLSConfig, cur.Cluster.TLSConfig
	opts.Routes = slices.Clone(cur.Routes)
	opts.Nkeys = nkeyUsers(ids, t.Key)
	names.set(ids)
	if err := ns.ReloadOptions(opts); err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, id := range ids {
		if !id.Revoked {
			live[id.Node] = true
		}
	}
	lz, err := ns.Leafz(nil)
	if err != nil {
		return opts, err
	}
	// A leaf link names its leaf server, which an edge names after its
	// gateway id; the link's nkey is not exposed, so a link whose server
	// is not a live node is cut (it logs in again only with a live key).
	for _, l := range lz.Leafs {
		if !live[l.Name] {
			ns.DisconnectClientByID(l.ID)
		}
	}
	return opts, nil
}

// NkeyOption is trust.NkeyOption.
func NkeyOption(kp nkeys.KeyPair) nats.Option { return trust.NkeyOption(kp) }

// InboxOption is trust.InboxOption.
func InboxOption(node string) nats.Option { return trust.InboxOption(node) }

// ClientOptions are the options a gateway's (or a hub client's)
// connection to a hub takes (trust.ClientOptions); none without t.
func ClientOptions(node string, t *NodeTrust) []nats.Option {
	if t == nil {
		return nil
	}
	return trust.ClientOptions(node, t.Key, t.CA)
}

// nodeNames maps public nkeys to node names for the log.
type nodeNames struct {
	m atomic.Pointer[map[string]trust.Identity]
}

func (n *nodeNames) set(ids []trust.Identity) {
	m := map[string]trust.Identity{}
	for _, id := range ids {
		m[id.Key] = id
	}
	n.m.Store(&m)
}

// liveHub reports whether name is a hub member the identities list and
// have not revoked.
func (n *nodeNames) liveHub(name string) bool {
	m := n.m.Load()
	if m == nil {
		return false
	}
	for _, id := range *m {
		if id.Node == name && id.Role == trust.RoleHub && !id.Revoked {
			return true
		}
	}
	return false
}

var (
	nkeyRE    = regexp.MustCompile(`U[A-Z2-7]{55}`)
	subjectRE = regexp.MustCompile(`(?:Subject|on|Publish to|Subscription to|Reply of) "([^"]+)"`)
)

// annotate names the identity (node, role, revoked) and subject a server
// line is about, for permission violations and authentication errors.
func (n *nodeNames) annotate(line string) []any {
	if n == nil || !(strings.Contains(line, "Violation") || strings.Contains(line, "authentication error")) {
		return nil
	}
	var attrs []any
	if k := nkeyRE.FindString(line); k != "" {
		attrs = append(attrs, "nkey", k)
		if m := n.m.Load(); m != nil {
			if id, ok := (*m)[k]; ok {
				attrs = append(attrs, "identity", id.Node, "role", string(id.Role))
				if id.Revoked {
					attrs = append(attrs, "revoked", true)
				}
			} else {
				attrs = append(attrs, "identity", "unknown")
			}
		}
	}
	if s := subjectRE.FindStringSubmatch(line); s != nil {
		attrs = append(attrs, "subject", s[1])
	}
	return attrs
}
