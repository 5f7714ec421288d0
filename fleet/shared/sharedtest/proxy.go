package sharedtest

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Proxy forwards TCP connections on loopback to a target, and injects the
// faults of a network between two nodes: it cuts (resets every
// connection and refuses new ones), delays every chunk, drops what flows
// back from the target (replies lost, requests delivered) and freezes
// (holds every connection open and forwards nothing either way, as a
// node stopped by SIGSTOP looks to its peers).
type Proxy struct {
	// From is the node that dials, To the node dialled ("" when unknown).
	From, To string

	ln     net.Listener
	target string

	mu       sync.Mutex
	cut      bool
	frozen   bool
	thaw     chan struct{} // closed when a freeze ends
	delay    time.Duration
	dropBack bool
	conns    map[*pipe]struct{}
}

// pipe is one forwarded connection: the dialer's side and the target's.
type pipe struct {
	c, u    net.Conn
	dropped bool // bytes were dropped: the stream is broken (TLS)
}

func (p *pipe) close() {
	p.c.Close()
	p.u.Close()
}

// StartProxy listens on a loopback port and forwards to target.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[*pipe]struct{}{}, thaw: make(chan struct{})}
	close(p.thaw)
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.Cut() })
	return p
}

// Addr is the proxy's listening address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		go p.forward(c)
	}
}

func (p *Proxy) forward(c net.Conn) {
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	pp := &pipe{c: c, u: u}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		pp.close()
		return
	}
	p.conns[pp] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.copy(pp, u, c, false); done <- struct{}{} }()
	go func() { p.copy(pp, c, u, true); done <- struct{}{} }()
	<-done
	pp.close()
	p.mu.Lock()
	delete(p.conns, pp)
	p.mu.Unlock()
}

// copy forwards src to dst chunk by chunk, each as the proxy's faults
// say; back is the target-to-dialer direction.
func (p *Proxy) copy(pp *pipe, dst, src net.Conn, back bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && p.pass(pp, back) {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// pass waits while the proxy is frozen, then reports whether a chunk
// goes through (after the delay, on real time: it emulates a network).
func (p *Proxy) pass(pp *pipe, back bool) bool {
	for {
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			return false
		}
		if p.frozen {
			thaw := p.thaw
			p.mu.Unlock()
			<-thaw
			continue
		}
		d, drop := p.delay, back && p.dropBack
		if drop {
			pp.dropped = true
		}
		p.mu.Unlock()
		if drop {
			return false
		}
		if d > 0 {
			t := time.NewTimer(d)
			<-t.C
		}
		return true
	}
}

// Cut closes every forwarded connection and refuses new ones; it ends a
// freeze.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.unfreeze()
	for pp := range p.conns {
		pp.close()
	}
}

// Heal accepts connections again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// Freeze holds every connection open, new ones too, and forwards nothing
// until Thaw.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.frozen {
		p.frozen, p.thaw = true, make(chan struct{})
	}
}

// Thaw forwards again what a freeze held.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unfreeze()
}

func (p *Proxy) unfreeze() {
	if p.frozen {
		p.frozen = false
		close(p.thaw)
	}
}

// Delay holds every chunk d before forwarding it (0: none).
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// DropBack drops everything the target sends back (the dialer's requests
// still arrive; their replies are lost) until Restore.
func (p *Proxy) DropBack() {
	p.mu.Lock()
	p.dropBack = true
	p.mu.Unlock()
}

// Restore stops dropping and closes the connections that lost bytes
// (their TLS streams are broken): the nodes link again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropBack = false
	for pp := range p.conns {
		if pp.dropped {
			pp.close()
		}
	}
}

// links is the fleet's proxies, by the nodes they join.
type links struct {
	mu  sync.Mutex
	all []*Proxy
}

// link starts a proxy from node from to node to (listening at target).
func (h *Hub) link(from, to, target string) *Proxy {
	p := StartProxy(h.t, target)
	p.From, p.To = from, to
	h.links.mu.Lock()
	h.links.all = append(h.links.all, p)
	h.links.mu.Unlock()
	return p
}

// Links returns the proxies that join node to another (either end).
func (h *Hub) Links(node string) []*Proxy {
	h.links.mu.Lock()
	defer h.links.mu.Unlock()
	var out []*Proxy
	for _, p := range h.links.all {
		if p.From == node || p.To == node {
			out = append(out, p)
		}
	}
	return out
}

// Freeze stops node (a hub member's name, hub-i, or a gateway's id) as
// SIGSTOP does, seen from the network: every link to and from it holds
// its connections open and forwards nothing, new links too, until Thaw.
// Unlike a stopped process, the node's own timers run on.
func (h *Hub) Freeze(node string) {
	for _, p := range h.Links(node) {
		p.Freeze()
	}
}

// Thaw resumes a frozen node: what its links held flows on.
func (h *Hub) Thaw(node string) {
	for _, p := range h.Links(node) {
		p.Thaw()
	}
}

// Name is hub member i's server name (hub-i).
func (h *Hub) Name(i int) string { return h.cfgs[i].Name }

// StreamLeader returns the index of the member leading stream (e.g.
// "KV_fleet_lease"), -1 when none does.
func (h *Hub) StreamLeader(stream string) int {
	for i := range h.cfgs {
		if ns := h.Node(i); ns != nil && ns.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			return i
		}
	}
	return -1
}
