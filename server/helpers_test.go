package server_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promcp/promcp-device/server"
)

// newServer is server.New(name, "test", opts...), failing the test on an
// error.
func newServer(t *testing.T, name string, opts ...server.Option) *server.Server {
	t.Helper()
	srv, err := server.New(name, "test", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// operatorToken returns a fresh token of caller with the operator role
// and the token file holding it alone.
func operatorToken(t *testing.T, caller string) (string, *server.Tokens) {
	t.Helper()
	token := server.NewToken()
	tokens, err := server.ParseTokens("tokens", strings.NewReader(server.TokenLine(caller, "operator", token)))
	if err != nil {
		t.Fatal(err)
	}
	return token, tokens
}

// manualClock is a clock the test moves.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}
func (c *manualClock) After(d time.Duration) <-chan time.Time { return make(chan time.Time) }
func (c *manualClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
