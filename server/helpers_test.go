package server_test

import (
	"strings"
	"testing"

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
