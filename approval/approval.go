// Package approval issues and checks human approvals of do_* actions.
//
// An approval is a short-lived, one-time token bound to one gateway, one
// action, one value and one idempotency key, signed with HMAC-SHA256 under
// a key that the gateway and the person approving share (a file only they
// can read). The gateway is part of what is signed (see [Signer.For]), so
// two gateways that share an approval key do not accept each other's
// tokens.
// `promcp-device approve` issues one; the agent passes it to do_* as the
// "approval" argument. The same signer signs the state that MCP elicitation
// round-trips through the client, so that an answer cannot be moved to
// another call. A signed elicitation state binds the answer to the call, not
// to a human: the client that answers may be the agent's own. So by default
// an action that needs approval accepts only an out-of-band token (see
// [ViaOutOfBand]); a policy opts an action into elicitation explicitly.
//
// # Concurrency
//
// Signer and Ledger are safe for concurrent use.
package approval

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// Errors of Verify.
var (
	ErrMalformed = errors.New("approval is malformed")
	ErrSignature = errors.New("approval signature does not match (wrong key or altered token)")
	ErrExpired   = errors.New("approval has expired")
	ErrMismatch  = errors.New("approval is for another action, value or idempotency key")
	ErrUsed      = errors.New("approval was already used")
	// ErrOtherGateway: the token was issued for another gateway (one
	// that shares the approval key).
	ErrOtherGateway = errors.New("approval is for another gateway")
	// ErrOldFormat: the token comes from a version of `promcp-device
	// approve` that did not bind it to a gateway.
	ErrOldFormat = errors.New("approval token has an old format that names no gateway: issue a new one with this version's promcp-device approve")
	// ErrNoKey is returned by LoadKey when the key file does not exist.
	ErrNoKey = errors.New("approval key file does not exist")
	// ErrKind: an override token was given as an approval, or an
	// approval as an override.
	ErrKind = errors.New("token is of another kind")
)

// How an approval was given, as the audit log records it.
const (
	// ViaOutOfBand is a token from `promcp-device approve`, which a person
	// holding the gateway's approval key issues outside the MCP session.
	ViaOutOfBand = "out_of_band"
	// ViaElicitation is an answer to the gateway's question through the
	// caller's own MCP client: convenient, but the client may be the agent.
	ViaElicitation = "elicitation"
	// ViaOverride is an emergency override from `promcp-device override`
	// (PhysMCP §6 emergency): not one value under one key but one tool,
	// for as long as the policy's emergency ttl, and only for a caller
	// whose role the policy's emergency admits. See [Signer.VerifyOverride].
	ViaOverride = "override"
)

// Format is the token format Issue writes: Grant.Format. Tokens without it
// (format 1) named no gateway and are refused with ErrOldFormat.
const Format = 2

// Grant is what an approval allows: one action with one value under one
// idempotency key, on one gateway, until Expires.
type Grant struct {
	// Format is the token's format (Issue sets [Format]).
	Format int `json:"v,omitempty"`
	// Gateway is the gateway the grant is for; Issue sets the signer's
	// (see [Signer.For]).
	Gateway string          `json:"gw,omitempty"`
	Tool    string          `json:"tool"`
	Value   json.RawMessage `json:"value"`
	Key     string          `json:"key"`
	Expires time.Time       `json:"exp"`
	// ID makes each token unique, for one-time use.
	ID string `json:"id"`
	// By names who approved, and Issued when (both for the audit log).
	By     string    `json:"by,omitempty"`
	Issued time.Time `json:"iat,omitzero"`
	// Override marks an emergency override of Tool (Value and Key are
	// empty): it is not an approval, and an approval is not one.
	Override bool `json:"ovr,omitempty"`
}

// Signer signs and checks grants, for one gateway (see [Signer.For]).
type Signer struct {
	key     []byte
	gateway string
}

// NewSigner returns a Signer with key (at least 16 bytes).
func NewSigner(key []byte) (*Signer, error) {
	if len(key) < 16 {
		return nil, fmt.Errorf("approval key is %d bytes, want at least 16", len(key))
	}
	return &Signer{key: append([]byte(nil), key...)}, nil
}

// For returns a signer with the same key for the gateway id: its tokens
// name that gateway, and it accepts only tokens that name it. The id is
// the gateway's name (its manifest's gateway:, or serve --gateway-id).
func (s *Signer) For(gateway string) *Signer {
	return &Signer{key: s.key, gateway: gateway}
}

// Gateway is the gateway the signer issues and accepts tokens for.
func (s *Signer) Gateway() string { return s.gateway }

// NewRandomSigner returns a Signer with a fresh random key, for state that
// only this process signs and checks (elicitation).
func NewRandomSigner() *Signer {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return &Signer{key: k}
}

// LoadOrCreateKey reads the hex key at path, creating it (mode 0600) with
// a random key when it does not exist.
func LoadOrCreateKey(path string) ([]byte, error) {
	k, err := LoadKey(path)
	if !errors.Is(err, ErrNoKey) {
		return k, err
	}
	k = make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("approval key: %w", err)
	}
	if err := os.WriteFile(path, []byte(hex.EncodeToString(k)+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("approval key %s: %w", path, err)
	}
	return k, nil
}

// LoadKey reads the hex key at path. Unlike LoadOrCreateKey it never
// creates one: a token signed with a fresh key would only be refused by
// the gateway, so a wrong path is an error (wrapping ErrNoKey).
func LoadKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("approval key %s: %w (give the file the gateway was started with: serve --approval-key FILE)", path, ErrNoKey)
	}
	if err != nil {
		return nil, fmt.Errorf("approval key %s: %w", path, err)
	}
	k, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("approval key %s: not hex: %w", path, err)
	}
	return k, nil
}

// Canonical encodes a tool argument value the way grants bind it.
func Canonical(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// Issue returns a token for g on the signer's gateway; a missing ID is
// generated.
func (s *Signer) Issue(g Grant) string {
	g.Format, g.Gateway = Format, s.gateway
	if g.ID == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		g.ID = hex.EncodeToString(b[:])
	}
	payload, _ := json.Marshal(g)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(s.mac(payload))
}

// Open checks the token's signature and returns its grant, without
// checking what it grants.
func (s *Signer) Open(token string) (Grant, error) {
	p, sig, ok := strings.Cut(strings.TrimSpace(token), ".")
	if !ok {
		return Grant{}, ErrMalformed
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return Grant{}, ErrMalformed
	}
	if !hmac.Equal(mac, s.mac(payload)) {
		return Grant{}, ErrSignature
	}
	var g Grant
	if err := json.Unmarshal(payload, &g); err != nil {
		return Grant{}, ErrMalformed
	}
	return g, nil
}

// Verify checks that token grants tool with value under key at now, on
// the signer's gateway.
func (s *Signer) Verify(token, tool string, value any, key string, now time.Time) (Grant, error) {
	g, err := s.valid(token, now)
	if err != nil {
		return g, err
	}
	if g.Override {
		return g, fmt.Errorf("%w: it is an emergency override, not an approval", ErrKind)
	}
	if g.Tool != tool || g.Key != key || !sameJSON(g.Value, Canonical(value)) {
		return g, fmt.Errorf("%w: it grants %s value=%s key=%q", ErrMismatch, g.Tool, g.Value, g.Key)
	}
	return g, nil
}

// IsOverride reports whether token is an emergency override signed with
// the signer's key (whatever else holds of it).
func (s *Signer) IsOverride(token string) bool {
	g, err := s.Open(token)
	return err == nil && g.Override
}

// VerifyOverride checks that token is an emergency override of tool, on
// the signer's gateway, at now, that lives no longer than maxTTL from its
// issue. Unlike an approval it may be used again until it expires.
func (s *Signer) VerifyOverride(token, tool string, maxTTL time.Duration, now time.Time) (Grant, error) {
	g, err := s.valid(token, now)
	if err != nil {
		return g, err
	}
	if !g.Override {
		return g, fmt.Errorf("%w: it is an approval, not an emergency override", ErrKind)
	}
	if g.Tool != tool {
		return g, fmt.Errorf("%w: it overrides %s", ErrMismatch, g.Tool)
	}
	if g.Issued.IsZero() || g.Expires.Sub(g.Issued) > maxTTL {
		return g, fmt.Errorf("%w: it lives %s, longer than the policy's emergency ttl %s", ErrExpired, g.Expires.Sub(g.Issued), maxTTL)
	}
	return g, nil
}

// valid opens token and checks its format, gateway and expiry.
func (s *Signer) valid(token string, now time.Time) (Grant, error) {
	g, err := s.Open(token)
	if err != nil {
		return Grant{}, err
	}
	if g.Format != Format {
		return g, ErrOldFormat
	}
	if g.Gateway != s.gateway {
		return g, fmt.Errorf("%w: it was issued for gateway %q, this is %q (issue one with promcp-device approve --manifest naming this gateway's manifest)",
			ErrOtherGateway, g.Gateway, s.gateway)
	}
	if !now.Before(g.Expires) {
		return g, fmt.Errorf("%w (at %s)", ErrExpired, g.Expires.UTC().Format(time.RFC3339))
	}
	return g, nil
}

func (s *Signer) mac(payload []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write(payload)
	return h.Sum(nil)
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// Ledger remembers the grants that were spent, so that each approval works
// once. Use marks a grant used (ErrUsed when it already was); Used asks
// without marking.
type Ledger interface {
	Use(g Grant, now time.Time) error
	Used(g Grant, now time.Time) bool
}

// MemoryLedger is a Ledger in memory: a restart forgets it. Serve with
// --state uses boltledger.BoltLedger instead.
type MemoryLedger struct {
	mu   sync.Mutex
	used map[string]time.Time
}

// NewLedger returns an empty MemoryLedger.
func NewLedger() *MemoryLedger { return &MemoryLedger{used: map[string]time.Time{}} }

// Use marks g used at now; it fails with ErrUsed when it already was.
func (l *MemoryLedger) Use(g Grant, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, exp := range l.used {
		if now.After(exp) {
			delete(l.used, id)
		}
	}
	if _, ok := l.used[g.ID]; ok {
		return ErrUsed
	}
	l.used[g.ID] = g.Expires
	return nil
}

// Used reports whether g was used, without using it.
func (l *MemoryLedger) Used(g Grant, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	exp, ok := l.used[g.ID]
	return ok && !now.After(exp)
}
