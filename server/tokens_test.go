package server_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/server"
)

func TestParseTokens(t *testing.T) {
	good := server.HashToken("s3cret")
	tests := []struct {
		name    string
		file    string
		wantErr string // substring; "" means valid
	}{
		{"valid with comments", "# name role hash\n\nalice operator " + good + "\n", ""},
		{"two fields", "alice " + good + "\n", "tokens.txt:1: bad tokens file: want NAME ROLE SHA256HEX, got 2 fields"},
		{"token in clear", "# c\nalice operator s3cret\n", "tokens.txt:2: bad tokens file: hash is not 64 hex digits"},
		{"bad name", "al/ice operator " + good + "\n", `tokens.txt:1: bad tokens file: name "al/ice"`},
		{"duplicate hash", "a operator " + good + "\nb viewer " + good + "\n", "tokens.txt:2: bad tokens file: the same token hash as line 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := server.ParseTokens("tokens.txt", strings.NewReader(tc.file))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseTokens = %v, want no error", err)
				}
				c, ok := tok.Lookup("s3cret")
				if !ok || c != (server.Caller{Name: "alice", Role: "operator"}) {
					t.Fatalf("Lookup(s3cret) = %+v, %t; want alice operator", c, ok)
				}
				if _, ok := tok.Lookup("wrong"); ok {
					t.Fatal("Lookup(wrong) found a caller")
				}
				return
			}
			if err == nil || !errors.Is(err, server.ErrTokenFile) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ParseTokens = %v, want an ErrTokenFile containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestNewTokenRoundTrip(t *testing.T) {
	tok := server.NewToken()
	ts, err := server.ParseTokens("x", strings.NewReader(server.TokenLine("bob", "viewer", tok)))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := ts.Lookup(tok); !ok || c.Role != "viewer" {
		t.Fatalf("Lookup(new token) = %+v, %t", c, ok)
	}
	if server.NewToken() == tok {
		t.Fatal("NewToken repeated itself")
	}
}

func FuzzParseTokens(f *testing.F) {
	f.Add("alice operator " + server.HashToken("x") + "\n# c\n")
	f.Add("a b c d\n")
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := server.ParseTokens("f", strings.NewReader(s))
		if err != nil && !errors.Is(err, server.ErrTokenFile) && !strings.Contains(err.Error(), "token too long") {
			t.Fatalf("ParseTokens error %v does not wrap ErrTokenFile", err)
		}
		if err == nil {
			ts.Lookup(s)
		}
	})
}
