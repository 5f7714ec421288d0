package server

import (
	"cmp"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/promcp/promcp-device/internal/filestamp"
)

// AuthError is a credential refused. Reason is safe to tell the client
// (it names what is wrong, never a key, a claim's value or which tokens
// exist); Detail adds what only the log may hold.
type AuthError struct {
	Reason string
	Detail string
}

func (e *AuthError) Error() string {
	if e.Detail == "" {
		return e.Reason
	}
	return e.Reason + " (" + e.Detail + ")"
}

func refused(reason, detailFormat string, a ...any) *AuthError {
	return &AuthError{Reason: reason, Detail: fmt.Sprintf(detailFormat, a...)}
}

// errOtherIssuer is a JWT of another issuer: the next provider may accept it.
var errOtherIssuer = errors.New("the token is of another issuer")

// JWT defaults.
const (
	// DefaultJWTLeeway is the clock skew allowed on exp, nbf and iat.
	DefaultJWTLeeway = 30 * time.Second
	// MaxJWTLeeway is the largest leeway a provider may set.
	MaxJWTLeeway = 5 * time.Minute
	// DefaultJWKSRefresh is how often keys fetched from a JWKS URL are
	// fetched again.
	DefaultJWKSRefresh = 15 * time.Minute
	// DefaultJWKSRetry is the least time between two fetches of a JWKS
	// URL prompted by a token signed with a key not yet known (a rotation)
	// or by a failed fetch.
	DefaultJWKSRetry = time.Minute
	// maxJWKSBytes bounds a JWKS document.
	maxJWKSBytes = 1 << 20
)

// JWTAlgorithms are the signature algorithms a JWT provider may allow:
// asymmetric only (never none, never HMAC, whose "key" would be the
// issuer's public key).
var JWTAlgorithms = []string{"RS256", "PS256", "ES256", "ES384", "EdDSA"}

// DefaultJWTAlgorithms are the algorithms allowed when a provider names none.
var DefaultJWTAlgorithms = []string{"RS256", "ES256", "EdDSA"}

// JWTConfig configures a JWT provider: bearer tokens signed by one issuer.
type JWTConfig struct {
	// Issuer is the iss a token must carry; Audience one of its aud.
	Issuer, Audience string
	// JWKSFile holds the issuer's public keys (a JWK Set); it is read
	// again when it changes. JWKSURL is where the issuer publishes them,
	// fetched at start, every Refresh, and when a token names a key not
	// yet known (at most every Retry). One of them is required; with both,
	// the file's keys and the URL's are used together.
	JWKSFile, JWKSURL string
	// Refresh is how often JWKSURL is fetched again; 0 means
	// DefaultJWKSRefresh. Retry bounds the fetches a new key id or a
	// failed fetch prompts; 0 means DefaultJWKSRetry.
	Refresh, Retry time.Duration
	// Algorithms are those allowed, from JWTAlgorithms; nil means
	// DefaultJWTAlgorithms.
	Algorithms []string
	// RolesClaim is the claim that holds the caller's role (a string, or a
	// list of strings), a dotted path into nested objects
	// ("realm_access.roles"); "" means "roles".
	RolesClaim string
	// NameClaim names the caller; "" means "sub".
	NameClaim string
	// Roles are the roles callers may hold, lowest first: a token holding
	// several gets the last of them it holds; values that are not roles
	// are ignored. nil means DefaultRoles.
	Roles []string
	// Leeway is the clock skew allowed on exp, nbf and iat; 0 means
	// DefaultJWTLeeway; at most MaxJWTLeeway.
	Leeway time.Duration
	// Client fetches JWKSURL; nil means a client with a 10 s timeout.
	Client *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// DefaultRoles are the roles a JWT or certificate may carry when the
// gateway declares none, lowest first.
var DefaultRoles = []string{"viewer", "operator", "supervisor", "admin"}

// JWTVerifier verifies the bearer tokens of one JWT provider. It is safe
// for concurrent use.
type JWTVerifier struct {
	cfg  JWTConfig
	algs []jose.SignatureAlgorithm

	mu        sync.Mutex
	fileKeys  []jose.JSONWebKey
	fileStamp filestamp.Stamp
	fileErr   error
	urlKeys   []jose.JSONWebKey
	fetched   time.Time // the last successful fetch of JWKSURL
	tried     time.Time // the last fetch of JWKSURL, successful or not
	urlErr    error
}

// NewJWTVerifier checks cfg and loads the issuer's keys. A JWKS file that
// cannot be read is an error; a JWKS URL that cannot be fetched is not (the
// gateway starts, refuses every token of the issuer and tries again; Err
// says why).
func NewJWTVerifier(cfg JWTConfig) (*JWTVerifier, error) {
	if cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("jwt provider: issuer and audience are required")
	}
	if cfg.JWKSFile == "" && cfg.JWKSURL == "" {
		return nil, errors.New("jwt provider: a JWKS file or URL (the issuer's public keys) is required")
	}
	if cfg.JWKSURL != "" {
		if err := CheckJWKSURL(cfg.JWKSURL); err != nil {
			return nil, fmt.Errorf("jwt provider: %w", err)
		}
	}
	if cfg.Leeway == 0 {
		cfg.Leeway = DefaultJWTLeeway
	}
	if cfg.Leeway < 0 || cfg.Leeway > MaxJWTLeeway {
		return nil, fmt.Errorf("jwt provider: leeway %s (want 0 to %s)", cfg.Leeway, MaxJWTLeeway)
	}
	cfg.Refresh = cmp.Or(cfg.Refresh, DefaultJWKSRefresh)
	cfg.Retry = cmp.Or(cfg.Retry, DefaultJWKSRetry)
	cfg.RolesClaim = cmp.Or(cfg.RolesClaim, "roles")
	cfg.NameClaim = cmp.Or(cfg.NameClaim, "sub")
	if cfg.Roles == nil {
		cfg.Roles = DefaultRoles
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Algorithms == nil {
		cfg.Algorithms = DefaultJWTAlgorithms
	}
	v := &JWTVerifier{cfg: cfg}
	for _, a := range cfg.Algorithms {
		if !slices.Contains(JWTAlgorithms, a) {
			return nil, fmt.Errorf("jwt provider: algorithm %q is not allowed (want %s; never none or HS*)", a, strings.Join(JWTAlgorithms, ", "))
		}
		v.algs = append(v.algs, jose.SignatureAlgorithm(a))
	}
	if cfg.JWKSFile != "" {
		v.mu.Lock()
		v.reloadFile()
		err := v.fileErr
		v.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	if cfg.JWKSURL != "" {
		v.mu.Lock()
		v.fetch(context.Background())
		v.mu.Unlock()
	}
	return v, nil
}

// CheckJWKSURL refuses a JWKS URL that is not https, but for a loopback
// host (an issuer on the same machine, or a test).
func CheckJWKSURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("jwks_url %q is not a URL", s)
	}
	if u.Scheme == "https" {
		return nil
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); u.Scheme == "http" && (host == "localhost" || ip != nil && ip.IsLoopback()) {
		return nil
	}
	return fmt.Errorf("jwks_url %q: want https (plain http only on loopback): keys fetched in clear text could be replaced on the way", s)
}

// Issuer returns the issuer the verifier accepts.
func (v *JWTVerifier) Issuer() string { return v.cfg.Issuer }

// Err returns why the verifier has no keys to verify with, or nil.
func (v *JWTVerifier) Err() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.fileKeys)+len(v.urlKeys) > 0 {
		return nil
	}
	return cmpErr(v.fileErr, v.urlErr, fmt.Errorf("jwt provider %s: the JWKS holds no public signing key", v.cfg.Issuer))
}

func cmpErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// reloadFile reads the JWKS file again when it changed. Called with v.mu held.
func (v *JWTVerifier) reloadFile() {
	fi, err := os.Stat(v.cfg.JWKSFile)
	if err != nil {
		v.fileKeys, v.fileErr = nil, fmt.Errorf("jwks_file: %w", err)
		return
	}
	if filestamp.Of(fi).Same(v.fileStamp) && v.fileErr == nil {
		return
	}
	data, err := os.ReadFile(v.cfg.JWKSFile)
	if err != nil {
		v.fileKeys, v.fileErr = nil, fmt.Errorf("jwks_file: %w", err)
		return
	}
	keys, err := publicKeys(data)
	if err != nil {
		v.fileKeys, v.fileErr = nil, fmt.Errorf("jwks_file %s: %w", v.cfg.JWKSFile, err)
		return
	}
	v.fileKeys, v.fileStamp, v.fileErr = keys, filestamp.Of(fi), nil
}

// fetch gets the keys at JWKSURL. Called with v.mu held; the fetch is
// bounded by the client's timeout.
func (v *JWTVerifier) fetch(ctx context.Context) {
	v.tried = v.cfg.Now()
	keys, err := v.get(ctx)
	if err != nil {
		v.urlErr = fmt.Errorf("jwks_url %s: %w", v.cfg.JWKSURL, err)
		return // the keys fetched before stay until a fetch succeeds
	}
	v.urlKeys, v.fetched, v.urlErr = keys, v.tried, nil
}

func (v *JWTVerifier) get(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.cfg.JWKSURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, application/jwk-set+json")
	resp, err := v.cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxJWKSBytes {
		return nil, fmt.Errorf("the JWKS is over %d bytes", maxJWKSBytes)
	}
	return publicKeys(data)
}

// publicKeys decodes a JWK Set and keeps its public signing keys: a
// private key is refused (it must not be on the gateway), a symmetric one
// is ignored (never verify with a shared secret from a key set).
func publicKeys(data []byte) ([]jose.JSONWebKey, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("not a JWK Set: %w", err)
	}
	var keys []jose.JSONWebKey
	for i, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if !k.IsPublic() {
			if _, secret := k.Key.([]byte); secret {
				continue
			}
			return nil, fmt.Errorf("key %d (kid %q) is a private key: publish only the public keys", i, k.KeyID)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("no public signing key in the JWK Set")
	}
	return keys, nil
}

// keys returns the keys that may have signed a token with key id kid
// (every key when kid is ""), reading the file again if it changed and
// fetching the URL again when its keys are stale or kid is unknown.
func (v *JWTVerifier) keys(ctx context.Context, kid string) []jose.JSONWebKey {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.cfg.JWKSFile != "" {
		v.reloadFile()
	}
	match := func() []jose.JSONWebKey {
		var out []jose.JSONWebKey
		for _, k := range slices.Concat(v.fileKeys, v.urlKeys) {
			if kid == "" || k.KeyID == kid {
				out = append(out, k)
			}
		}
		return out
	}
	if v.cfg.JWKSURL == "" {
		return match()
	}
	now := v.cfg.Now()
	stale := now.Sub(v.fetched) >= v.cfg.Refresh
	if (stale || len(match()) == 0) && now.Sub(v.tried) >= v.cfg.Retry {
		v.fetch(ctx)
	}
	return match()
}

// Verify checks a compact JWS token: its algorithm is allowed, its
// signature verifies with a key of the issuer, iss and aud are the
// provider's, exp is given and not past, nbf and iat are not in the
// future (each within the leeway). It returns the caller: named by the
// name claim, with the highest declared role the roles claim holds. A
// token of another issuer gives an error wrapping errOtherIssuer.
func (v *JWTVerifier) Verify(ctx context.Context, token string) (Caller, error) {
	tok, err := jwt.ParseSigned(token, v.algs)
	if err != nil {
		alg := tokenAlg(token)
		if alg != "" && !slices.Contains(v.algs, jose.SignatureAlgorithm(alg)) {
			return Caller{}, refused("the token's signature algorithm is not allowed", "alg %q, allowed %v", alg, v.cfg.Algorithms)
		}
		return Caller{}, refused("the token is not a well-formed signed JWT", "%v", err)
	}
	if len(tok.Headers) != 1 {
		return Caller{}, refused("the token is not a well-formed signed JWT", "%d signatures", len(tok.Headers))
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return Caller{}, refused("the token's claims are not well-formed", "%v", err)
	}
	if unverified.Issuer != v.cfg.Issuer {
		return Caller{}, fmt.Errorf("%w: iss %q, want %q", errOtherIssuer, unverified.Issuer, v.cfg.Issuer)
	}
	h := tok.Headers[0]
	var std jwt.Claims
	var all map[string]any
	verified := false
	for _, k := range v.keys(ctx, h.KeyID) {
		if k.Algorithm != "" && k.Algorithm != h.Algorithm {
			continue
		}
		if tok.Claims(k.Key, &std, &all) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return Caller{}, refused("the token's signature does not verify with the issuer's keys", "iss %q kid %q alg %s; keys: %v", v.cfg.Issuer, h.KeyID, h.Algorithm, v.Err())
	}
	if std.Expiry == nil {
		return Caller{}, refused("the token has no expiry (exp)", "iss %q sub %q", std.Issuer, std.Subject)
	}
	err = std.ValidateWithLeeway(jwt.Expected{Issuer: v.cfg.Issuer, AnyAudience: jwt.Audience{v.cfg.Audience}, Time: v.cfg.Now()}, v.cfg.Leeway)
	switch {
	case errors.Is(err, jwt.ErrExpired):
		return Caller{}, refused("the token has expired", "sub %q exp %s", std.Subject, std.Expiry.Time().UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return Caller{}, refused("the token is not valid yet", "sub %q", std.Subject)
	case errors.Is(err, jwt.ErrInvalidAudience):
		return Caller{}, refused("the token is not for this audience", "sub %q aud %v, want %q", std.Subject, []string(std.Audience), v.cfg.Audience)
	case err != nil:
		return Caller{}, refused("the token's claims are not valid", "sub %q: %v", std.Subject, err)
	}
	return v.caller(all)
}

// caller names the caller and gives its role, from the verified claims.
func (v *JWTVerifier) caller(all map[string]any) (Caller, error) {
	name, _ := claimAt(all, v.cfg.NameClaim).(string)
	if !validCallerName(name) {
		return Caller{}, refused("the token names no caller", "claim %s is %q", v.cfg.NameClaim, name)
	}
	raw := claimAt(all, v.cfg.RolesClaim)
	if raw == nil {
		return Caller{}, refused("the token has no role claim", "sub %q: no claim %s", name, v.cfg.RolesClaim)
	}
	var held []string
	switch r := raw.(type) {
	case string:
		held = strings.Fields(r)
	case []any:
		for _, x := range r {
			if s, ok := x.(string); ok {
				held = append(held, s)
			}
		}
	}
	role := highestRole(v.cfg.Roles, held)
	if role == "" {
		return Caller{}, refused("the token holds no role this gateway declares", "sub %q: claim %s is %v, want one of %v", name, v.cfg.RolesClaim, raw, v.cfg.Roles)
	}
	return Caller{Name: name, Role: role}, nil
}

// highestRole is the last of roles (lowest first) that held contains.
func highestRole(roles, held []string) string {
	for i := len(roles) - 1; i >= 0; i-- {
		if slices.Contains(held, roles[i]) {
			return roles[i]
		}
	}
	return ""
}

// claimAt follows a dotted path into the claims.
func claimAt(claims map[string]any, path string) any {
	var cur any = claims
	for part := range strings.SplitSeq(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

// validCallerName is a name fit for logs and the audit: 1 to 128
// printable characters, no space.
func validCallerName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r == '"' || r == '\\' {
			return false
		}
	}
	return true
}

// tokenAlg reads the alg of a compact JWS header, for the log only ("" when
// the header does not decode).
func tokenAlg(token string) string {
	head, _, ok := strings.Cut(token, ".")
	if !ok || len(head) > 4096 {
		return ""
	}
	data, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return ""
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(data, &h) != nil || len(h.Alg) > 32 {
		return ""
	}
	return h.Alg
}

// looksLikeJWT tells a compact JWS (three base64url parts, a JSON header)
// from an opaque token.
func looksLikeJWT(token string) bool {
	return strings.Count(token, ".") == 2 && strings.HasPrefix(token, "eyJ")
}

// CertConfig configures an mTLS provider: client certificates issued by a
// CA the site already runs.
type CertConfig struct {
	// CAFile holds the CA certificates (PEM) a client certificate must
	// chain to.
	CAFile string
	// RoleFrom says where the certificate carries the role: "uri" (the
	// default: a URI SAN promcp:role:NAME) or "ou" (an organizational unit
	// of the subject named as the role).
	RoleFrom string
	// NameFrom says what names the caller: "cn" (the default: the
	// subject's common name), "dns", "email" or "uri" (the first SAN of
	// that kind).
	NameFrom string
	// Roles are the declared roles, lowest first (see JWTConfig.Roles).
	Roles []string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// CertVerifier verifies client certificates against one CA.
type CertVerifier struct {
	cfg  CertConfig
	pool *x509.CertPool
	cas  []*x509.Certificate
}

// NewCertVerifier reads the CA file.
func NewCertVerifier(cfg CertConfig) (*CertVerifier, error) {
	cfg.RoleFrom = cmp.Or(cfg.RoleFrom, "uri")
	cfg.NameFrom = cmp.Or(cfg.NameFrom, "cn")
	if !slices.Contains([]string{"uri", "ou"}, cfg.RoleFrom) {
		return nil, fmt.Errorf("mtls provider: role_from %q (want uri or ou)", cfg.RoleFrom)
	}
	if !slices.Contains([]string{"cn", "dns", "email", "uri"}, cfg.NameFrom) {
		return nil, fmt.Errorf("mtls provider: name_from %q (want cn, dns, email or uri)", cfg.NameFrom)
	}
	if cfg.Roles == nil {
		cfg.Roles = DefaultRoles
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	data, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("mtls provider: %w", err)
	}
	pool := x509.NewCertPool()
	var cas []*x509.Certificate
	n := 0
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("mtls provider: %s: %w", cfg.CAFile, err)
		}
		pool.AddCert(c)
		cas = append(cas, c)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("mtls provider: %s holds no PEM certificate", cfg.CAFile)
	}
	return &CertVerifier{cfg: cfg, pool: pool, cas: cas}, nil
}

// Verify checks a client's certificate chain (leaf first, as TLS presents
// it) against the CA for client authentication, and returns its caller.
func (v *CertVerifier) Verify(chain []*x509.Certificate) (Caller, error) {
	if len(chain) == 0 {
		return Caller{}, &AuthError{Reason: "a client certificate is required"}
	}
	leaf := chain[0]
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := leaf.Verify(x509.VerifyOptions{Roots: v.pool, Intermediates: inter, CurrentTime: v.cfg.Now(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		var inv x509.CertificateInvalidError
		var unk x509.UnknownAuthorityError
		switch {
		case errors.As(err, &inv) && inv.Reason == x509.Expired:
			return Caller{}, refused("the client certificate has expired or is not valid yet", "subject %q: %v", leaf.Subject.CommonName, err)
		case errors.As(err, &inv) && inv.Reason == x509.IncompatibleUsage:
			return Caller{}, refused("the client certificate is not for client authentication", "subject %q: %v", leaf.Subject.CommonName, err)
		case errors.As(err, &unk):
			return Caller{}, refused("the client certificate is not issued by a trusted CA", "subject %q issuer %q", leaf.Subject.CommonName, leaf.Issuer.CommonName)
		}
		return Caller{}, refused("the client certificate does not verify", "subject %q: %v", leaf.Subject.CommonName, err)
	}
	name := v.certName(leaf)
	if !validCallerName(name) {
		return Caller{}, refused("the client certificate names no caller", "want a %s, subject %q", v.cfg.NameFrom, leaf.Subject.String())
	}
	var held []string
	if v.cfg.RoleFrom == "ou" {
		held = leaf.Subject.OrganizationalUnit
	} else {
		for _, u := range leaf.URIs {
			if r, ok := strings.CutPrefix(u.String(), "promcp:role:"); ok {
				held = append(held, r)
			}
		}
	}
	role := highestRole(v.cfg.Roles, held)
	if role == "" {
		return Caller{}, refused("the client certificate holds no role this gateway declares", "%s: role_from %s gives %v, want one of %v", name, v.cfg.RoleFrom, held, v.cfg.Roles)
	}
	return Caller{Name: name, Role: role}, nil
}

func (v *CertVerifier) certName(c *x509.Certificate) string {
	switch v.cfg.NameFrom {
	case "dns":
		if len(c.DNSNames) > 0 {
			return c.DNSNames[0]
		}
	case "email":
		if len(c.EmailAddresses) > 0 {
			return c.EmailAddresses[0]
		}
	case "uri":
		for _, u := range c.URIs {
			if u.Scheme != "promcp" {
				return u.String()
			}
		}
	default:
		return c.Subject.CommonName
	}
	return ""
}
