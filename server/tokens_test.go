package server_test

import (
	"errors"
	"os"
	"path/filepath"
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

// A tokens file loaded from disk is followed: a revoked token stops
// working at its next use, an undeclared role is named, and a file that
// no longer parses accepts no token (fail closed).
func TestTokensFollowTheirFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.txt")
	alice, bob := server.NewToken(), server.NewToken()
	content := "# tokens\n" + server.TokenLine("alice", "operator", alice) + "\n" + server.TokenLine("bob", "veiwer", bob) + "\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := server.LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	err = tokens.CheckRoles([]string{"viewer", "operator"})
	if err == nil || !strings.Contains(err.Error(), "tokens.txt:3") || !strings.Contains(err.Error(), `"veiwer"`) || strings.Contains(err.Error(), "alice") {
		t.Fatalf("CheckRoles = %v, want only bob's line 3 and its role named", err)
	}
	if _, ok := tokens.Lookup(bob); ok {
		t.Fatal("a token of an undeclared role is accepted after CheckRoles")
	}
	if n, err := server.RevokeTokens(path, "bob", ""); n != 1 || err != nil {
		t.Fatalf("RevokeTokens(bob) = %d, %v", n, err)
	}
	if _, ok := tokens.Lookup(bob); ok {
		t.Fatal("a revoked token still works")
	}
	if c, ok := tokens.Lookup(alice); !ok || c.Name != "alice" {
		t.Fatalf("alice after revoking bob: %v %v", c, ok)
	}
	if got := tokens.List(); len(got) != 1 || got[0].Name != "alice" || got[0].Line != 2 || len(got[0].HashPrefix) != 12 {
		t.Fatalf("List = %+v", got)
	}
	if err := os.WriteFile(path, []byte(content+"broken line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := tokens.Lookup(alice); ok {
		t.Fatal("a tokens file that no longer parses still accepts a token")
	}
	if tokens.Err() == nil {
		t.Fatal("Err = nil for a broken file")
	}
}

// A token replaced by another of the same length, the new file renamed over
// the old one within the same clock tick (same size, same modification
// time), is seen: the old token stops working. A check of time and size
// alone kept accepting it.
func TestTokensReplacedWithinOneTick(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.txt")
	old, next := server.NewToken(), server.NewToken()
	if err := os.WriteFile(path, []byte(server.TokenLine("alice", "operator", old)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := server.LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tokens.Lookup(old); !ok {
		t.Fatal("alice's token is not accepted")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tokens.new")
	if err := os.WriteFile(tmp, []byte(server.TokenLine("alice", "operator", next)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if _, ok := tokens.Lookup(old); ok {
		t.Fatal("the replaced token still works: a file renamed over it with the same size and time was not read again")
	}
	if c, ok := tokens.Lookup(next); !ok || c.Name != "alice" {
		t.Fatalf("the new token: %v %v", c, ok)
	}
}
