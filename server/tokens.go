package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/promcp/promcp-device/internal/asciiname"
	"github.com/promcp/promcp-device/internal/fileowner"
	"github.com/promcp/promcp-device/internal/filestamp"
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
// Tokens loaded from a file (LoadTokens) follow the file: when it changes
// (promcp-device token revoke, an edit), the next Lookup reads it again,
// so a revoked token stops working without a restart. A file that no
// longer parses accepts no token until it is mended (fail closed).
//
// Tokens is safe for concurrent use.
type Tokens struct {
	path string // "" when parsed from a reader: never reloaded

	mu      sync.Mutex
	entries []tokenEntry
	stamp   filestamp.Stamp
	err     error    // the reloaded file's problem; no token is accepted while set
	known   []string // the declared roles, once CheckRoles ran; a token of another role is not accepted

	jwt []*JWTVerifier // JWT providers: a token shaped as a JWT is verified by them (AcceptJWT)
}

// NewTokens returns a set without opaque tokens, for a site whose callers
// all bring JWTs (AcceptJWT).
func NewTokens() *Tokens { return &Tokens{} }

// AcceptJWT makes the tokens accept bearer JWTs of the providers v too:
// a token shaped as a JWT (three base64url parts) is verified by the
// provider of its issuer, any other token is looked up in the file. Call
// it before the tokens are used.
func (t *Tokens) AcceptJWT(v ...*JWTVerifier) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.jwt = append(t.jwt, v...)
}

// errUnknownToken is an opaque token the file does not hold.
var errUnknownToken = &AuthError{Reason: "the bearer token is not valid"}

// Check returns the caller a bearer token is bound to, or why it is
// refused (an *AuthError): a JWT is verified by the provider of its
// issuer, an opaque token is looked up in the file.
func (t *Tokens) Check(ctx context.Context, token string) (Caller, error) {
	t.mu.Lock()
	jwts := t.jwt
	t.mu.Unlock()
	if len(jwts) == 0 || !looksLikeJWT(token) {
		if c, ok := t.lookup(token); ok {
			return c, nil
		}
		return Caller{}, errUnknownToken
	}
	var other []string
	for _, v := range jwts {
		c, err := v.Verify(ctx, token)
		if errors.Is(err, errOtherIssuer) {
			other = append(other, err.Error())
			continue
		}
		return c, err
	}
	return Caller{}, &AuthError{Reason: "the token's issuer is not trusted", Detail: strings.Join(other, "; ")}
}

// hasJWT tells whether JWT providers were added (AcceptJWT).
func (t *Tokens) hasJWT() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.jwt) > 0
}

// CheckJWT verifies a caller credential that travelled with a routed
// fleet call: only a JWT of one of the providers is accepted, never an
// opaque token (which another node could have replayed from its own
// tokens file). The error is an *AuthError saying why.
func (t *Tokens) CheckJWT(ctx context.Context, token string) (Caller, error) {
	if t == nil || !t.hasJWT() {
		return Caller{}, &AuthError{Reason: "this gateway has no JWT identity provider to verify the caller's credential"}
	}
	if !looksLikeJWT(token) {
		return Caller{}, &AuthError{Reason: "the caller's credential is not a JWT"}
	}
	return t.Check(ctx, token)
}

// HasJWT tells whether the tokens verify JWTs (a policy's jwt identity
// providers): a gateway that does verifies routed callers itself.
func (t *Tokens) HasJWT() bool { return t != nil && t.hasJWT() }

type tokenEntry struct {
	hash   [sha256.Size]byte
	caller Caller
	line   int
}

// TokenInfo is one tokens-file line as token list shows it: never the
// token, only a prefix of its hash.
type TokenInfo struct {
	Name, Role string
	// HashPrefix is the first 12 hex digits of the token's SHA-256.
	HashPrefix string
	Line       int
}

// tokenName is `^[A-Za-z0-9._@-]{1,64}$`, checked without a regular
// expression (its counted repetition compiles to about 60 KB at init).
func tokenName(s string) bool { return asciiname.Match(s, 1, 64, "._@-") }

// LoadTokens reads a tokens file.
func LoadTokens(path string) (*Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	t, err := ParseTokens(path, f)
	if err != nil {
		return nil, err
	}
	t.path, t.stamp = path, filestamp.Of(fi)
	return t, nil
}

// reload reads the file again when it changed since it was read. It is
// called with t.mu held.
func (t *Tokens) reload() {
	if t.path == "" {
		return
	}
	again, err := filestamp.Changed(t.path, t.stamp, t.err != nil)
	if err != nil {
		t.err, t.entries = fmt.Errorf("tokens: %w", err), nil
		return
	}
	if !again {
		return
	}
	n, err := LoadTokens(t.path)
	if err != nil {
		t.err, t.entries = err, nil
		return
	}
	t.entries, t.stamp, t.err = n.entries, n.stamp, nil
}

// Err returns why a reloaded tokens file accepts no token, or nil.
func (t *Tokens) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reload()
	return t.err
}

// List returns the tokens' lines, in file order.
func (t *Tokens) List() []TokenInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]TokenInfo, 0, len(t.entries))
	for _, e := range t.entries {
		out = append(out, TokenInfo{Name: e.caller.Name, Role: e.caller.Role, HashPrefix: hex.EncodeToString(e.hash[:6]), Line: e.line})
	}
	return out
}

// CheckRoles returns an error naming each token whose role is not in
// known (a typo such as "veiwer" would otherwise make a caller with a role
// no rule mentions).
//
// From then on, a token whose role is not in known is not accepted, so a
// line added to the file while the gateway runs cannot bring in an
// undeclared role either.
func (t *Tokens) CheckRoles(known []string) error {
	t.mu.Lock()
	t.known = slices.Clone(known)
	t.mu.Unlock()
	var errs []error
	for _, e := range t.List() {
		if !slices.Contains(known, e.Role) {
			errs = append(errs, fmt.Errorf("%s:%d: %w: %s has role %q, which is not declared (want %s)",
				t.path, e.Line, ErrTokenFile, e.Name, e.Role, strings.Join(known, ", ")))
		}
	}
	return errors.Join(errs...)
}

// RevokeTokens removes from the tokens file at path every token of name
// whose hash starts with hashPrefix ("" for all of name's tokens), and
// returns how many it removed. The file is replaced atomically (a
// temporary file renamed over it, mode 0600, owner kept), comments kept; a server
// serving it stops accepting the tokens at their next use.
func RevokeTokens(path, name, hashPrefix string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("tokens: %w", err)
	}
	if _, err := ParseTokens(path, bytes.NewReader(data)); err != nil {
		return 0, err
	}
	var out []string
	n := 0
	for _, line := range strings.SplitAfter(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && !strings.HasPrefix(f[0], "#") && f[0] == name && strings.HasPrefix(f[2], strings.ToLower(hashPrefix)) {
			n++
			continue
		}
		out = append(out, line)
	}
	if n == 0 {
		return 0, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("tokens: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tokens-*")
	if err != nil {
		return 0, fmt.Errorf("tokens: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(strings.Join(out, ""))
	if werr == nil {
		werr = tmp.Chmod(0o600)
	}
	if werr == nil {
		werr = fileowner.Keep(tmp, fi, "the tokens file")
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		return 0, fmt.Errorf("tokens %s: %w", path, werr)
	}
	return n, nil
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
		if !tokenName(f[0]) {
			bad("name %q (want letters, digits, . _ @ -)", f[0])
		}
		if !tokenName(f[1]) {
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
		e.line = n
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
func (t *Tokens) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}

// Lookup returns the caller a token is bound to: Check without the
// reason. Hashes are compared in constant time. A file that changed is
// read again first.
func (t *Tokens) Lookup(token string) (Caller, bool) {
	c, err := t.Check(context.Background(), token)
	return c, err == nil
}

func (t *Tokens) lookup(token string) (Caller, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reload()
	h := sha256.Sum256([]byte(token))
	var found Caller
	ok := false
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(h[:], e.hash[:]) == 1 {
			found, ok = e.caller, true
		}
	}
	if ok && t.known != nil && !slices.Contains(t.known, found.Role) {
		return Caller{}, false
	}
	return found, ok
}

// Undeclared returns the caller of a token that Lookup refuses only
// because its role is not among the roles CheckRoles declared, so that the
// refusal can say so; false for any other token.
func (t *Tokens) Undeclared(token string) (Caller, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.known == nil {
		return Caller{}, false
	}
	h := sha256.Sum256([]byte(token))
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(h[:], e.hash[:]) == 1 && !slices.Contains(t.known, e.caller.Role) {
			return e.caller, true
		}
	}
	return Caller{}, false
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
