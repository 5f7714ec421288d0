package natsembed_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/promcp/promcp-device/fleet"
	"github.com/promcp/promcp-device/fleet/natsembed"
	"github.com/promcp/promcp-device/fleet/shared"
	"github.com/promcp/promcp-device/fleet/trust"
	"github.com/promcp/promcp-device/manifests"
)

var ping = manifests.FleetPing{Interval: 200 * time.Millisecond, MaxMissed: 2}

// logRec is a server log line with its attributes.
type logRec struct {
	msg   string
	attrs map[string]string
}

// logSink keeps the hub's log lines (info and above).
type logSink struct {
	mu    sync.Mutex
	recs  []logRec
	added chan struct{}
}

func newSink() *logSink { return &logSink{added: make(chan struct{}, 1)} }

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	if r.Level < slog.LevelInfo {
		return nil
	}
	rec := logRec{msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool { rec.attrs[a.Key] = a.Value.String(); return true })
	s.mu.Lock()
	s.recs = append(s.recs, rec)
	s.mu.Unlock()
	select {
	case s.added <- struct{}{}:
	default:
	}
	return nil
}
func (s *logSink) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *logSink) WithGroup(string) slog.Handler      { return s }

// wait waits for a line for which match holds, and returns it.
func (s *logSink) wait(t *testing.T, what string, match func(logRec) bool) logRec {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		s.mu.Lock()
		for _, r := range s.recs {
			if match(r) {
				s.mu.Unlock()
				return r
			}
		}
		s.mu.Unlock()
		select {
		case <-s.added:
		case <-timeout:
			s.mu.Lock()
			defer s.mu.Unlock()
			t.Fatalf("the hub logged no %s; its error lines: %+v", what, s.recs)
		}
	}
}

// refusal waits for the hub's log line refusing identity on subject.
func (s *logSink) refusal(t *testing.T, identity, subject string) logRec {
	t.Helper()
	return s.wait(t, fmt.Sprintf("refusal of %s on %s", identity, subject), func(r logRec) bool {
		return r.attrs["identity"] == identity && slices.Contains(spellings(subject), r.attrs["subject"]) && strings.Contains(r.msg, "Violation")
	})
}

// spellings are the subjects a refusal of subject may name: the server
// checks a JetStream request in the hub's domain ($JS.hub.API.…) after
// mapping it to the hub's own API ($JS.API.…, and $KV.… for a KV put).
func spellings(subject string) []string {
	out := []string{subject}
	if rest, ok := strings.CutPrefix(subject, "$JS.hub.API."); ok {
		out = append(out, "$JS.API."+rest, rest)
	}
	return out
}

// fleetDir is a fleet directory: hub1 (and hub2), gateways gw1 to gw3.
func fleetDir(t *testing.T, hubs ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fleet")
	if _, err := trust.Init(dir, trust.InitOptions{Hubs: hubs, Gateways: []string{"gw1", "gw2", "gw3"}}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func hubTrust(t *testing.T, dir, hub string) *natsembed.HubTrust {
	t.Helper()
	ca, err := trust.ReadCA(filepath.Join(dir, trust.CACertFile), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := trust.ReadKeyPair(filepath.Join(dir, hub, hub+".crt"), filepath.Join(dir, hub, hub+".key"), ca, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	key, err := trust.ReadSeed(filepath.Join(dir, hub, hub+".nk"))
	if err != nil {
		t.Fatal(err)
	}
	return &natsembed.HubTrust{Cert: cert, CA: ca, Key: key, IdentitiesFile: filepath.Join(dir, trust.IdentitiesFile), Watch: 50 * time.Millisecond}
}

func nodeTrust(t *testing.T, dir, node string) *natsembed.NodeTrust {
	t.Helper()
	ca, err := trust.ReadCA(filepath.Join(dir, node, trust.CACertFile), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	key, err := trust.ReadSeed(filepath.Join(dir, node, node+".nk"))
	if err != nil {
		t.Fatal(err)
	}
	return &natsembed.NodeTrust{Key: key, CA: ca}
}

// startHub starts hub1 alone (JetStream R1) with the fleet's buckets and
// shared state, and returns it with its own connection.
func startHub(t *testing.T, dir string, log *slog.Logger) (*server.Server, *nats.Conn) {
	t.Helper()
	cfg := natsembed.HubConfig{Name: "hub1", Client: "127.0.0.1:0", Leaf: "127.0.0.1:0", StoreDir: t.TempDir(), Ping: ping,
		Trust: hubTrust(t, dir, "hub1")}
	ns, err := natsembed.StartHub(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	nc, err := natsembed.ConnectSelf(ns, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := fleet.SetupHub(ctx, nc, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := shared.Open(ctx, nc, shared.Config{Gateway: "hub1", Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	return ns, nc
}

// errs collects a connection's asynchronous errors (permission
// violations among them).
type errs struct{ c chan error }

func (e errs) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	select {
	case e.c <- err:
	default:
	}
}

// violation waits for the connection to be told of a permission violation
// naming subject.
func (e errs) violation(t *testing.T, subject string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	var seen []string
	for {
		select {
		case err := <-e.c:
			if errors.Is(err, nats.ErrPermissionViolation) && slices.ContainsFunc(spellings(subject), func(s string) bool { return strings.Contains(err.Error(), `"`+s+`"`) }) {
				return
			}
			seen = append(seen, err.Error())
		case <-timeout:
			t.Fatalf("no permission violation on %s reported to the client (others: %q)", subject, seen)
		}
	}
}

// connectAs connects to ns's client port over TLS with node's credentials.
func connectAs(t *testing.T, ns *server.Server, dir, node string, opts ...nats.Option) (*nats.Conn, errs) {
	t.Helper()
	e := errs{c: make(chan error, 64)}
	opts = append(append(natsembed.ClientOptions(node, nodeTrust(t, dir, node)), nats.Name(node), nats.ErrorHandler(e.handler)), opts...)
	nc, err := nats.Connect(ns.ClientURL(), opts...)
	if err != nil {
		t.Fatalf("%s: %v", node, err)
	}
	t.Cleanup(nc.Close)
	return nc, e
}

// With gw1's own credentials, NATS refuses a subscription to promcp.> (so
// gw1 sees none of the others' calls, can_do questions or audit records),
// publishing on another gateway's call, can_do and audit subjects,
// writing another gateway's registry and heartbeat keys, and touching
// the shared state's bucket: purge a key, purge or delete the stream. The
// hub logs each refusal with the identity and the subject; nothing
// changes on the hub.
func TestGatewayCannotActForAnother(t *testing.T) {
	dir := fleetDir(t, "hub1")
	sink := newSink()
	ns, hub := startHub(t, dir, slog.New(sink))
	gw1, e1 := connectAs(t, ns, dir, "gw1")
	gw2, _ := connectAs(t, ns, dir, "gw2")

	// Eavesdropping: the wildcard subscription is refused outright.
	sniff, err := gw1.SubscribeSync("promcp.>")
	if err != nil {
		t.Fatal(err)
	}
	e1.violation(t, "promcp.>")
	sink.refusal(t, "gw1", "promcp.>")
	// gw1's own subjects work: a call entering at gw2 for gw1 arrives.
	own, err := gw1.SubscribeSync("promcp.call.gw1.*")
	if err != nil {
		t.Fatal(err)
	}
	gw1.Flush()
	for _, subj := range []string{"promcp.call.gw3.gw2", "promcp.cando.gw3.gw2", "promcp.call.gw1.gw2"} {
		if err := gw2.Publish(subj, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	gw2.Flush()
	if m, err := own.NextMsg(10 * time.Second); err != nil || m.Subject != "promcp.call.gw1.gw2" {
		t.Fatalf("gw1's own call: %v %v", m, err)
	}
	if m, err := sniff.NextMsg(100 * time.Millisecond); err == nil {
		t.Errorf("gw1 received %s on promcp.>", m.Subject)
	}

	// Speaking for another gateway.
	watch, err := hub.SubscribeSync("promcp.>")
	if err != nil {
		t.Fatal(err)
	}
	hub.Flush()
	for _, subj := range []string{"promcp.call.gw2.gw2", "promcp.cando.gw2.gw2", "promcp.audit.gw2", "promcp.shared.gw2.reserve"} {
		if err := gw1.Publish(subj, []byte(`{"caller":{"name":"mallory","role":"admin"}}`)); err != nil {
			t.Fatal(err)
		}
		e1.violation(t, subj)
		sink.refusal(t, "gw1", subj)
	}
	if m, err := watch.NextMsg(100 * time.Millisecond); err == nil {
		t.Errorf("the hub received gw1's %s", m.Subject)
	}

	// Registry, heartbeat and the shared state's bucket and streams.
	js, err := jetstream.NewWithDomain(gw1, natsembed.HubDomain)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := js.KeyValue(t.Context(), fleet.RegistryBucket) // reading the registry is allowed
	if err != nil {
		t.Fatalf("gw1 cannot open the registry to read it: %v", err)
	}
	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(t.Context(), time.Second) }
	ctx, cancel := short()
	if _, err := reg.Put(ctx, "gw.gw1", []byte(`{"gateway_id":"gw1"}`)); err != nil {
		t.Errorf("gw1 cannot write its own registry key: %v", err)
	}
	cancel()
	for _, tc := range []struct {
		what, subject string
		do            func(context.Context) error
	}{
		{"register gw9", "$KV.fleet_registry.gw.gw9", func(ctx context.Context) error {
			_, err := reg.Put(ctx, "gw.gw9", []byte(`{"gateway_id":"gw9"}`))
			return err
		}},
		{"overwrite gw2's heartbeat", "$JS.hub.API.$KV.fleet_alive.gw.gw2", func(ctx context.Context) error {
			_, err := gw1.RequestWithContext(ctx, "$JS.hub.API.$KV.fleet_alive.gw.gw2", []byte("x"))
			return err
		}},
		{"delete the lease bucket", "$JS.hub.API.STREAM.DELETE.KV_fleet_lease", func(ctx context.Context) error {
			return js.DeleteKeyValue(ctx, "fleet_lease")
		}},
		{"delete the lease stream", "$JS.hub.API.STREAM.DELETE.KV_fleet_lease", func(ctx context.Context) error {
			return js.DeleteStream(ctx, "KV_fleet_lease")
		}},
		{"purge the lease stream", "$JS.hub.API.STREAM.PURGE.KV_fleet_lease", func(ctx context.Context) error {
			_, err := gw1.RequestWithContext(ctx, "$JS.hub.API.STREAM.PURGE.KV_fleet_lease", []byte(`{"filter":"$KV.fleet_lease.cooldown.>"}`))
			return err
		}},
		{"purge a cooldown key", "$KV.fleet_lease.cooldown.gw2.do_set_fan", func(ctx context.Context) error {
			m := nats.NewMsg("$KV.fleet_lease.cooldown.gw2.do_set_fan")
			m.Header.Set("KV-Operation", "PURGE")
			m.Header.Set("Nats-Rollup", "sub")
			_, err := gw1.RequestMsgWithContext(ctx, m)
			return err
		}},
		{"write a cooldown", "$JS.hub.API.$KV.fleet_lease.cooldown.gw2.do_set_fan", func(ctx context.Context) error {
			_, err := gw1.RequestWithContext(ctx, "$JS.hub.API.$KV.fleet_lease.cooldown.gw2.do_set_fan", []byte("2099-01-01"))
			return err
		}},
	} {
		ctx, cancel := short()
		err := tc.do(ctx)
		cancel()
		if err == nil {
			t.Errorf("%s: NATS let gw1 do it", tc.what)
			continue
		}
		e1.violation(t, tc.subject)
		sink.refusal(t, "gw1", tc.subject)
	}
	hjs, err := jetstream.NewWithDomain(hub, natsembed.HubDomain)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hjs.Stream(t.Context(), "KV_fleet_lease"); err != nil {
		t.Errorf("the lease stream is gone: %v", err)
	}
	hreg, err := hjs.KeyValue(t.Context(), fleet.RegistryBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hreg.Get(t.Context(), "gw.gw9"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("gw9 registered: %v", err)
	}
	if !gw1.IsConnected() || !gw2.IsConnected() {
		t.Error("a refusal cut a client connection")
	}
}

// A revoked gateway is cut off (its live connection closed, its next one
// refused, with a log line naming it revoked) while another stays
// connected; its leaf link is cut too.
func TestRevokedGatewayRefused(t *testing.T) {
	dir := fleetDir(t, "hub1")
	sink := newSink()
	ns, _ := startHub(t, dir, slog.New(sink))
	closed := make(chan struct{})
	connectAs(t, ns, dir, "gw3", nats.NoReconnect(), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	gw2, _ := connectAs(t, ns, dir, "gw2")
	leaf, err := natsembed.StartLeaf(natsembed.LeafConfig{Name: "gw1", Hubs: []string{natsembed.LeafURL(ns)}, StoreDir: t.TempDir(),
		Ping: ping, Trust: nodeTrust(t, dir, "gw1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(leaf.Shutdown)
	waitFor(t, "gw1's leaf link", func() bool { return ns.NumLeafNodes() == 1 })
	other, err := natsembed.StartLeaf(natsembed.LeafConfig{Name: "gw2", Hubs: []string{natsembed.LeafURL(ns)}, StoreDir: t.TempDir(),
		Ping: ping, Trust: nodeTrust(t, dir, "gw2")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Shutdown)
	waitFor(t, "gw2's leaf link", func() bool { return ns.NumLeafNodes() == 2 })
	leafID := func(name string) uint64 {
		lz, err := ns.Leafz(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lz.Leafs {
			if l.Name == name {
				return l.ID
			}
		}
		return 0
	}
	gw2Link := leafID("gw2")

	if _, err := trust.Revoke(dir, "gw3"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("the hub did not cut the revoked gw3's live connection")
	}
	opts := append(natsembed.ClientOptions("gw3", nodeTrust(t, dir, "gw3")), nats.Timeout(5*time.Second))
	if nc, err := nats.Connect(ns.ClientURL(), opts...); err == nil {
		nc.Close()
		t.Fatal("the revoked gw3 connected again")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("revoked gw3: err = %v, want an authorization violation", err)
	}
	sink.wait(t, "refused login of the revoked gw3", func(r logRec) bool {
		return strings.Contains(r.msg, "authentication error") && r.attrs["identity"] == "gw3" && r.attrs["revoked"] == "true"
	})
	if _, err := trust.Revoke(dir, "gw1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the revoked gw1's leaf link cut", func() bool { return leafID("gw1") == 0 })
	if err := gw2.Flush(); err != nil || !gw2.IsConnected() {
		t.Errorf("gw2 lost its connection when others were revoked: %v", err)
	}
	if id := leafID("gw2"); id != gw2Link {
		t.Errorf("gw2's leaf link was cut by the reloads (link %d, now %d)", gw2Link, id)
	}
	if leafID("gw1") != 0 {
		t.Error("the revoked gw1's leaf joined again")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so after a minute", what)
		}
		time.Sleep(20 * time.Millisecond) // polling server state, not for correctness
	}
}

// TLS is on: a plain-text client gets only the hub's INFO demanding TLS
// and no further; a client that does not trust the fleet CA fails the
// handshake; one without an nkey is refused; a leaf whose hub
// certificate does not verify does not link.
func TestTLSOnEveryPort(t *testing.T) {
	dir := fleetDir(t, "hub1")
	ns, _ := startHub(t, dir, nil)
	for _, addr := range []string{ns.Addr().String(), strings.TrimPrefix(natsembed.LeafURL(ns), "nats://")} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || !strings.Contains(line, `"tls_required":true`) {
			t.Errorf("%s: INFO %q (%v) does not require TLS", addr, line, err)
		}
		fmt.Fprintf(c, "CONNECT {\"verbose\":false}\r\nPUB promcp.call.gw1.gw2 1\r\nx\r\nPING\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		rest, _ := bufio.NewReader(c).ReadString('\n')
		if strings.HasPrefix(rest, "PONG") || strings.HasPrefix(rest, "+OK") {
			t.Errorf("%s: a plain-text client was answered %q", addr, rest)
		}
		c.Close()
	}
	if nc, err := nats.Connect(ns.ClientURL(), nats.Timeout(5*time.Second), natsembed.NkeyOption(nodeTrust(t, dir, "gw1").Key)); err == nil {
		nc.Close()
		t.Error("a client that does not verify against the fleet CA connected")
	}
	other := fleetDir(t, "hub1") // another fleet's CA and keys
	if nc, err := nats.Connect(ns.ClientURL(), append(natsembed.ClientOptions("gw1", nodeTrust(t, other, "gw1")), nats.Timeout(5*time.Second))...); err == nil {
		nc.Close()
		t.Error("another fleet's gw1 connected")
	}
	nt := nodeTrust(t, dir, "gw1")
	if nc, err := nats.Connect(ns.ClientURL(), nats.Secure(trust.ClientTLS(nt.CA)), nats.Timeout(5*time.Second)); err == nil {
		nc.Close()
		t.Error("a client without an nkey connected")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("no nkey: err = %v, want an authorization violation", err)
	}
	leaf, err := natsembed.StartLeaf(natsembed.LeafConfig{Name: "gw1", Hubs: []string{natsembed.LeafURL(ns)}, StoreDir: t.TempDir(),
		Ping: ping, Trust: &natsembed.NodeTrust{Key: nt.Key, CA: nodeTrust(t, other, "gw1").CA}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer leaf.Shutdown()
	good, err := natsembed.StartLeaf(natsembed.LeafConfig{Name: "gw2", Hubs: []string{natsembed.LeafURL(ns)}, StoreDir: t.TempDir(),
		Ping: ping, Trust: nodeTrust(t, dir, "gw2")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer good.Shutdown()
	waitFor(t, "gw2's leaf link", func() bool { return good.NumLeafNodes() == 1 })
	if leaf.NumLeafNodes() != 0 || ns.NumLeafNodes() != 1 {
		t.Errorf("a leaf that cannot verify the hub's certificate linked (hub leafs %d)", ns.NumLeafNodes())
	}
}

// A gateway cannot join the hub cluster as a route: a route must present
// a certificate the fleet CA signed, which only hub members hold. A
// server with what a gateway has (the CA certificate, no certificate of
// its own) and one with another fleet's hub certificate are refused; a
// second member with its own certificate joins.
func TestGatewayCannotJoinTheCluster(t *testing.T) {
	dir := fleetDir(t, "hub1", "hub2", "hub3")
	sink := newSink()
	var clusters, routes []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		clusters, routes = append(clusters, ln.Addr().String()), append(routes, "nats://"+ln.Addr().String())
		ln.Close()
	}
	started := make(chan *server.Server, 1)
	go func() {
		ns, err := natsembed.StartHub(natsembed.HubConfig{Name: "hub1", Client: "127.0.0.1:0", Cluster: clusters[0], Leaf: "127.0.0.1:0",
			Routes: routes, StoreDir: t.TempDir(), Ping: ping, Trust: hubTrust(t, dir, "hub1")}, slog.New(sink))
		if err != nil {
			t.Error(err)
		}
		started <- ns
	}()
	route := routes[0]
	rogue := func(name string, tc *tls.Config) *server.Server {
		u, _ := url.Parse(route)
		opts := &server.Options{ServerName: name, Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true,
			Cluster: server.ClusterOpts{Name: "hub", Host: "127.0.0.1", Port: -1, TLSConfig: tc, TLSTimeout: 5}, Routes: []*url.URL{u}}
		ns, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		go ns.Start()
		t.Cleanup(ns.Shutdown)
		return ns
	}
	gw := nodeTrust(t, dir, "gw1")
	rogue("gw1", &tls.Config{RootCAs: gw.CA, MinVersion: tls.VersionTLS12})
	sink.wait(t, "refused route without a certificate", func(r logRec) bool {
		return strings.Contains(r.msg, "rid:") && strings.Contains(r.msg, "certificate")
	})
	other := hubTrust(t, fleetDir(t, "hub1"), "hub1")
	rogue("mallory", trust.ClusterTLS(other.Cert, gw.CA))
	sink.wait(t, "refused route with another fleet's certificate", func(r logRec) bool {
		return strings.Contains(r.msg, "rid:") && strings.Contains(r.msg, "unknown authority")
	})
	// A revoked member's certificate, though the fleet CA signed it, no
	// longer routes.
	if _, err := trust.Revoke(dir, "hub3"); err != nil {
		t.Fatal(err)
	}
	sink.wait(t, "reload of the identities", func(r logRec) bool { return r.msg == "fleet identities reloaded" })
	rogue("hub3", trust.ClusterTLS(hubTrust(t, dir, "hub3").Cert, gw.CA))
	sink.wait(t, "refused route of the revoked hub3", func(r logRec) bool {
		return strings.Contains(r.msg, "rid:") && strings.Contains(r.msg, `"hub3": not a live hub member`)
	})
	sink.mu.Lock()
	for _, r := range sink.recs {
		if strings.Contains(r.msg, "fleet identities") && r.msg != "fleet identities reloaded" {
			t.Errorf("hub1: %s %v", r.msg, r.attrs)
		}
	}
	sink.mu.Unlock()
	hub2, err := natsembed.StartHub(natsembed.HubConfig{Name: "hub2", Client: "127.0.0.1:0", Cluster: clusters[1], Leaf: "127.0.0.1:0",
		Routes: routes, StoreDir: t.TempDir(), Ping: ping, Trust: hubTrust(t, dir, "hub2")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hub2.Shutdown)
	hub1 := <-started
	if hub1 == nil {
		t.FailNow()
	}
	t.Cleanup(hub1.Shutdown)
	waitFor(t, "hub2 routed to hub1", func() bool { return hub2.NumRemotes() == 1 })
	rz, err := hub1.Routez(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rz.Routes {
		if r.RemoteName != "hub2" {
			t.Errorf("hub1 has a route to %s", r.RemoteName)
		}
	}
}

// Replies across a leaf link: allow_responses does not carry them (the
// hub sends a leaf interest only in subjects the gateway may publish, so
// the edge's leaf server has no interest in the requester's inbox and
// drops the reply); a reply subject that names the responder,
// _INBOX.<requester>.<responder>.…, which the responder alone may
// publish on, does. So an answer's sender is bound by NATS.
func TestLeafRepliesNameTheResponder(t *testing.T) {
	dir := fleetDir(t, "hub1")
	ns, hub := startHub(t, dir, nil)
	cfg := natsembed.LeafConfig{Name: "gw1", Hubs: []string{natsembed.LeafURL(ns)}, StoreDir: t.TempDir(), Ping: ping, Trust: nodeTrust(t, dir, "gw1")}
	leaf, err := natsembed.StartLeaf(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(leaf.Shutdown)
	gw1, err := natsembed.Connect(leaf, "gw1", natsembed.LeafSelfOptions(cfg)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw1.Close)
	if _, err := gw1.Subscribe("promcp.call.gw1.*", func(m *nats.Msg) { m.Respond([]byte("ok")) }); err != nil {
		t.Fatal(err)
	}
	gw1.Flush()
	waitFor(t, "gw1's call interest on the hub", func() bool {
		_, err := hub.Request("promcp.call.gw1.hub1", nil, 200*time.Millisecond)
		return !errors.Is(err, nats.ErrNoResponders)
	})
	if _, err := hub.Request("promcp.call.gw1.hub1", nil, time.Second); err == nil {
		t.Log("a reply to the hub's plain inbox crossed the leaf link (allow_responses carried it)")
	} else {
		t.Logf("a reply to the hub's plain inbox: %v", err)
	}
	sub, err := hub.SubscribeSync("_INBOX.hub1.gw1.>")
	if err != nil {
		t.Fatal(err)
	}
	hub.Flush()
	waitFor(t, "a reply on _INBOX.hub1.gw1.…", func() bool {
		if err := hub.PublishRequest("promcp.call.gw1.hub1", "_INBOX.hub1.gw1.q1", nil); err != nil {
			t.Fatal(err)
		}
		_, err := sub.NextMsg(200 * time.Millisecond)
		return err == nil
	})
}

// The hub sources an edge's audit stream (AUDIT_<gw> in the edge's
// JetStream domain) into FLEET_AUDIT across the leaf link, with the
// gateway's contract permissions and no more.
func TestHubSourcesEdgeAudit(t *testing.T) {
	dir := fleetDir(t, "hub1")
	sink := newSink()
	ns, hub := startHub(t, dir, slog.New(sink))
	cfg := natsembed.LeafConfig{Name: "gw1", Hubs: []string{natsembed.LeafURL(ns)}, StoreDir: t.TempDir(), Ping: ping, Trust: nodeTrust(t, dir, "gw1")}
	leaf, err := natsembed.StartLeaf(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(leaf.Shutdown)
	gw1, err := natsembed.Connect(leaf, "gw1", natsembed.LeafSelfOptions(cfg)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw1.Close)
	waitFor(t, "gw1's leaf link", func() bool { return ns.NumLeafNodes() == 1 })
	local, err := jetstream.New(gw1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := local.CreateStream(ctx, jetstream.StreamConfig{Name: "AUDIT_gw1", Subjects: []string{"promcp.audit.gw1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := local.Publish(ctx, "promcp.audit.gw1", []byte(`{"seq":1}`)); err != nil {
		t.Fatal(err)
	}
	hjs, err := jetstream.NewWithDomain(hub, natsembed.HubDomain)
	if err != nil {
		t.Fatal(err)
	}
	st, err := hjs.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "FLEET_AUDIT_T", Sources: []*jetstream.StreamSource{{Name: "AUDIT_gw1",
		External: &jetstream.ExternalStream{APIPrefix: "$JS.gw1.API", DeliverPrefix: "promcp.audit.gw1.src"}}}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		info, err := st.Info(ctx)
		if err == nil && info.State.Msgs == 1 {
			break
		}
		if time.Now().After(deadline) {
			sink.mu.Lock()
			defer sink.mu.Unlock()
			t.Fatalf("the hub's stream did not source gw1's record (%v %+v); hub errors: %+v", err, info, sink.recs)
		}
		time.Sleep(50 * time.Millisecond) // polling the stream's state
	}
	if ns.NumLeafNodes() != 1 {
		t.Error("gw1's leaf link was cut while sourcing")
	}
}
