package testnet

import (
	"net"
	"testing"
)

// The address is on loopback and nothing listens there: a dial is refused,
// and a listener can take it.
func TestFreeAddrIsClosedAndFree(t *testing.T) {
	addr := FreeAddr(t)
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("FreeAddr = %q (%v), want a 127.0.0.1 address", addr, err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("something listens on %s", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	ln.Close()
}
