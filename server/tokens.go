package server

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// ErrTokenFile is wrapped by every error in a tokens file.
var ErrTokenFile = errors.New("bad tokens file")

// Tokens are the bearer tokens an HTTP server accepts, each bound to a
// caller (a name and a role). Only SHA-256 hashes of the tokens are held.
//
// The file format is one token per line, "NAME ROLE SHA256HEX", with blank
// lines and lines starting with # ignored:
//
//	# promcp-device tokens: name role sha256(token)
//	alice operator 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
//
// Tokens is safe for concurrent use; it is not changed after loading.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	hash   [sha256.Size]byte
	caller Caller
}

var tokenName = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,64}$`)

// LoadTokens reads a tokens file.
func LoadTokens(path string) (*Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	defer f.Close()
	return ParseTokens(path, f)
}

// ParseTokens reads the tokens file format from r; file names it in errors
// ("tokens.txt:3: ...").
func ParseTokens(file string, r io.Reader) (*Tokens, error) {
	t := &Tokens{}
	sc := bufio.NewScanner(r)
	var errs []error
	seen := map[string]int{}
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bad := func(format string, a ...any) {
			errs = append(errs, fmt.Errorf("%s:%d: %w: "+format, append([]any{file, n, ErrTokenFile}, a...)...))
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			bad("want NAME ROLE SHA256HEX, got %d fields", len(f))
			continue
		}
		if !tokenName.MatchString(f[0]) {
			bad("name %q (want letters, digits, . _ @ -)", f[0])
		}
		if !tokenName.MatchString(f[1]) {
			bad("role %q (want a word such as viewer, operator, supervisor or admin)", f[1])
		}
		h, err := hex.DecodeString(f[2])
		if err != nil || len(h) != sha256.Size {
			bad("hash is not 64 hex digits (store the SHA-256 of the token, never the token: promcp-device token add)")
			continue
		}
		if prev, dup := seen[f[2]]; dup {
			bad("the same token hash as line %d", prev)
			continue
		}
		seen[f[2]] = n
		var e tokenEntry
		copy(e.hash[:], h)
		e.caller = Caller{Name: f[0], Role: f[1]}
		t.entries = append(t.entries, e)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", file, err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
}

// Len returns the number of tokens.
func (t *Tokens) Len() int { return len(t.entries) }

// Lookup returns the caller a token is bound to. Hashes are compared in
// constant time.
func (t *Tokens) Lookup(token string) (Caller, bool) {
	h := sha256.Sum256([]byte(token))
	var found Caller
	ok := false
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(h[:], e.hash[:]) == 1 {
			found, ok = e.caller, true
		}
	}
	return found, ok
}

// HashToken returns the SHA-256 hex of a token, as the tokens file holds it.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// NewToken returns a new random token (256 bits, URL-safe base64).
func NewToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return "pmd_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// TokenLine returns the tokens file line for a token.
func TokenLine(name, role, token string) string {
	return fmt.Sprintf("%s %s %s", name, role, HashToken(token))
}
