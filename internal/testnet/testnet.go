// Package testnet gives tests loopback addresses to listen on or to find
// closed.
package testnet

import (
	"net"
	"strconv"
	"testing"
)

// FreeAddr returns a loopback address ("127.0.0.1:port") whose port was
// free a moment ago: its listener is closed before FreeAddr returns, so
// nothing listens there until the test starts something on it. A failure
// to listen fails tb.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(tb)))
}

// FreePort is FreeAddr's port, for configurations that take the host and
// the port apart.
func FreePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen on loopback: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
