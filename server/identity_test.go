package server_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/server/servertest"
)

const (
	testIss = "https://auth.example.com"
	testAud = "physmcp-mesh"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// jwtFixture is a verifier of testIss whose keys are in a JWKS file.
type jwtFixture struct {
	is   *servertest.Issuer
	file string
	clk  *clock.Manual
	v    *server.JWTVerifier
}

func newJWTFixture(t testing.TB, cfg server.JWTConfig) *jwtFixture {
	t.Helper()
	f := &jwtFixture{is: servertest.NewIssuer(t, testIss, "k1"), file: filepath.Join(t.TempDir(), "jwks.json"), clk: clock.NewManual(t0)}
	if err := os.WriteFile(f.file, servertest.JWKS(t, f.is), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Issuer, cfg.Audience, cfg.JWKSFile, cfg.Now = testIss, testAud, f.file, f.clk.Now
	var err error
	if f.v, err = server.NewJWTVerifier(cfg); err != nil {
		t.Fatal(err)
	}
	return f
}

// claims are valid claims of sub with role, at t0, plus more.
func claims(sub string, role any, more ...any) map[string]any {
	c := map[string]any{"sub": sub, "aud": testAud, "exp": t0.Add(time.Hour).Unix(), "iat": t0.Add(-time.Minute).Unix(), "promcp_role": role}
	for i := 0; i+1 < len(more); i += 2 {
		if more[i+1] == nil {
			delete(c, more[i].(string))
			continue
		}
		c[more[i].(string)] = more[i+1]
	}
	return c
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// TestJWTVerify: each way a token can be wrong is refused with a reason
// that says which, and a valid one gives the caller from sub and the
// configured role claim.
func TestJWTVerify(t *testing.T) {
	f := newJWTFixture(t, server.JWTConfig{RolesClaim: "promcp_role"})
	other := servertest.NewIssuer(t, testIss, "k1") // same kid, another key
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	body := b64(`{"iss":"` + testIss + `","sub":"mallory","aud":"` + testAud + `","exp":9999999999,"promcp_role":"admin"}`)
	mac := hmac.New(sha256.New, servertest.JWKS(t, f.is)) // HS256 keyed with the issuer's public key set
	mac.Write([]byte(b64(`{"alg":"HS256","kid":"k1"}`) + "." + body))
	hs256 := b64(`{"alg":"HS256","kid":"k1"}`) + "." + body + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))

	tests := []struct {
		name   string
		token  string
		want   server.Caller
		reason string // "" means accepted
	}{
		{"valid", f.is.Token(t, claims("alice", "operator")), server.Caller{Name: "alice", Role: "operator"}, ""},
		{"roles as a list: the highest declared", f.is.Token(t, claims("alice", []any{"staff", "viewer", "supervisor"})), server.Caller{Name: "alice", Role: "supervisor"}, ""},
		{"expired within the leeway", f.is.Token(t, claims("alice", "operator", "exp", t0.Add(-20*time.Second).Unix())), server.Caller{Name: "alice", Role: "operator"}, ""},
		{"expired", f.is.Token(t, claims("alice", "operator", "exp", t0.Add(-31*time.Second).Unix())), server.Caller{}, "the token has expired"},
		{"not valid yet", f.is.Token(t, claims("alice", "operator", "nbf", t0.Add(time.Minute).Unix())), server.Caller{}, "the token is not valid yet"},
		{"no expiry", f.is.Token(t, claims("alice", "operator", "exp", nil)), server.Caller{}, "the token has no expiry (exp)"},
		{"wrong issuer", servertest.SignJWT(t, f.is.Key, jose.ES256, "k1", claims("alice", "operator", "iss", "https://evil.example")), server.Caller{}, "the token's issuer is not trusted"},
		{"wrong audience", f.is.Token(t, claims("alice", "operator", "aud", "another-api")), server.Caller{}, "the token is not for this audience"},
		{"wrong key", other.Token(t, claims("alice", "admin")), server.Caller{}, "the token's signature does not verify with the issuer's keys"},
		{"alg none", b64(`{"alg":"none"}`) + "." + body + ".", server.Caller{}, "the token's signature algorithm is not allowed"},
		{"HS256 keyed with the public key", hs256, server.Caller{}, "the token's signature algorithm is not allowed"},
		{"RS256 with a key the issuer does not publish", servertest.SignJWT(t, rsaKey, jose.RS256, "k1", claims("alice", "admin", "iss", testIss)), server.Caller{}, "the token's signature does not verify with the issuer's keys"},
		{"missing role claim", f.is.Token(t, claims("alice", nil)), server.Caller{}, "the token has no role claim"},
		{"undeclared role", f.is.Token(t, claims("alice", "root")), server.Caller{}, "the token holds no role this gateway declares"},
		{"no subject", f.is.Token(t, claims("", "operator")), server.Caller{}, "the token names no caller"},
		{"tampered payload", func() string {
			p := strings.Split(f.is.Token(t, claims("alice", "viewer")), ".")
			return p[0] + "." + b64(`{"iss":"`+testIss+`","sub":"alice","aud":"`+testAud+`","exp":9999999999,"promcp_role":"admin"}`) + "." + p[2]
		}(), server.Caller{}, "the token's signature does not verify with the issuer's keys"},
		{"garbage", "eyJhbGciOi.x.y", server.Caller{}, "the token is not a well-formed signed JWT"},
	}
	tokens := server.NewTokens()
	tokens.AcceptJWT(f.v)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tokens.Check(t.Context(), tc.token)
			if tc.reason == "" {
				if err != nil || c != tc.want {
					t.Fatalf("Check = %+v, %v; want %+v", c, err, tc.want)
				}
				return
			}
			ae, ok := errors.AsType[*server.AuthError](err)
			if !ok || ae.Reason != tc.reason {
				t.Fatalf("Check = %+v, %v; want refused: %s", c, err, tc.reason)
			}
			if c != (server.Caller{}) {
				t.Fatalf("a refused token gave caller %+v", c)
			}
		})
	}
}

// TestJWTNestedClaimsAndName: the role claim may be a dotted path into
// nested objects, and the name another claim than sub.
func TestJWTNestedClaimsAndName(t *testing.T) {
	f := newJWTFixture(t, server.JWTConfig{RolesClaim: "realm_access.roles", NameClaim: "preferred_username"})
	tok := f.is.Token(t, claims("0f3a-uuid", nil, "realm_access", map[string]any{"roles": []any{"operator", "offline_access"}}, "preferred_username", "carol"))
	c, err := f.v.Verify(t.Context(), tok)
	if err != nil || c != (server.Caller{Name: "carol", Role: "operator"}) {
		t.Fatalf("Verify = %+v, %v; want carol operator", c, err)
	}
}

// TestJWTConfigRefusesUnsafe: none, HMAC, plain-http JWKS URLs off
// loopback and a too large leeway are refused when the provider is made.
func TestJWTConfigRefusesUnsafe(t *testing.T) {
	file := filepath.Join(t.TempDir(), "jwks.json")
	os.WriteFile(file, servertest.JWKS(t, servertest.NewIssuer(t, testIss, "k")), 0o600)
	for _, tc := range []struct {
		cfg  server.JWTConfig
		want string
	}{
		{server.JWTConfig{Algorithms: []string{"none"}}, `algorithm "none" is not allowed`},
		{server.JWTConfig{Algorithms: []string{"HS256"}}, `algorithm "HS256" is not allowed`},
		{server.JWTConfig{JWKSURL: "http://auth.example.com/jwks"}, "want https"},
		{server.JWTConfig{Leeway: time.Hour}, "leeway 1h0m0s"},
	} {
		tc.cfg.Issuer, tc.cfg.Audience = testIss, testAud
		if tc.cfg.JWKSURL == "" {
			tc.cfg.JWKSFile = file
		}
		if _, err := server.NewJWTVerifier(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewJWTVerifier(%+v) = %v; want %q", tc.cfg, err, tc.want)
		}
	}
	// A JWKS file holding a private key is refused: it must not be here.
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: priv, KeyID: "p", Algorithm: "ES256"}}})
	os.WriteFile(file, set, 0o600)
	if _, err := server.NewJWTVerifier(server.JWTConfig{Issuer: testIss, Audience: testAud, JWKSFile: file}); err == nil || !strings.Contains(err.Error(), "is a private key") {
		t.Errorf("a JWKS with a private key: %v; want refused", err)
	}
}

// TestJWKSFileRotation: the JWKS file is read again when it changes: a
// token of the retired key is refused, one of the new key accepted.
func TestJWKSFileRotation(t *testing.T) {
	f := newJWTFixture(t, server.JWTConfig{RolesClaim: "promcp_role"})
	old := f.is.Token(t, claims("alice", "operator"))
	if _, err := f.v.Verify(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	next := servertest.NewIssuer(t, testIss, "k2")
	if err := os.WriteFile(f.file, servertest.JWKS(t, next), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(f.file, t0, t0.Add(time.Second)) // a new stamp even on a coarse clock
	if _, err := f.v.Verify(t.Context(), old); err == nil {
		t.Fatal("a token of the retired key was accepted after the rotation")
	}
	if c, err := f.v.Verify(t.Context(), next.Token(t, claims("alice", "operator"))); err != nil || c.Name != "alice" {
		t.Fatalf("a token of the new key: %+v, %v", c, err)
	}
}

// TestJWKSURLRotation: keys come from the issuer's JWKS URL (a loopback
// test server). A token naming a key id not yet known fetches them again
// (at most once per Retry), so a rotation needs no restart; a fetch
// failing keeps the keys fetched before.
func TestJWKSURLRotation(t *testing.T) {
	k1, k2 := servertest.NewIssuer(t, testIss, "k1"), servertest.NewIssuer(t, testIss, "k2")
	var published atomic.Pointer[[]byte]
	var fetches, failing atomic.Int32
	set := servertest.JWKS(t, k1)
	published.Store(&set)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if failing.Load() == 1 {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		w.Write(*published.Load())
	}))
	defer ts.Close()
	clk := clock.NewManual(t0)
	v, err := server.NewJWTVerifier(server.JWTConfig{Issuer: testIss, Audience: testAud, JWKSURL: ts.URL + "/jwks", RolesClaim: "promcp_role",
		Now: clk.Now, Client: ts.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), k1.Token(t, claims("alice", "operator"))); err != nil {
		t.Fatalf("k1: %v", err)
	}
	if n := fetches.Load(); n != 1 {
		t.Fatalf("%d fetches after the first token; want 1 (at start)", n)
	}
	set2 := servertest.JWKS(t, k1, k2)
	published.Store(&set2)
	tok2 := k2.Token(t, claims("bob", "viewer"))
	clk.Advance(10 * time.Second) // within Retry: no fetch yet
	if _, err := v.Verify(t.Context(), tok2); err == nil {
		t.Fatal("k2 accepted before its keys were fetched")
	}
	clk.Advance(time.Minute)
	if c, err := v.Verify(t.Context(), tok2); err != nil || c.Name != "bob" {
		t.Fatalf("k2 after the retry interval: %+v, %v", c, err)
	}
	if n := fetches.Load(); n != 2 {
		t.Fatalf("%d fetches; want 2", n)
	}
	failing.Store(1)
	clk.Advance(server.DefaultJWKSRefresh)
	if _, err := v.Verify(t.Context(), k1.Token(t, claims("alice", "operator"))); err != nil {
		t.Fatalf("k1 while the issuer is down (keys fetched before stay): %v", err)
	}
	if n := fetches.Load(); n != 3 {
		t.Fatalf("%d fetches; want 3 (the refresh that failed)", n)
	}
}

// certFixture is a CA, its verifier, and a second CA nobody trusts.
type certFixture struct {
	ca, rogue *servertest.CA
	v         *server.CertVerifier
}

func newCertFixture(t *testing.T, cfg server.CertConfig) *certFixture {
	t.Helper()
	f := &certFixture{ca: servertest.NewCA(t, "site CA"), rogue: servertest.NewCA(t, "rogue CA")}
	cfg.CAFile = filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(cfg.CAFile, f.ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	if f.v, err = server.NewCertVerifier(cfg); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCertVerify: a client certificate of the CA gives its CN and the role
// of its URI SAN (or OU); one of another CA, expired, not for client
// authentication, without a declared role, or absent, is refused saying
// which.
func TestCertVerify(t *testing.T) {
	f := newCertFixture(t, server.CertConfig{})
	ou := newCertFixture(t, server.CertConfig{RoleFrom: "ou"})
	tests := []struct {
		name   string
		v      *server.CertVerifier
		leaf   *servertest.Leaf
		want   server.Caller
		reason string
	}{
		{"valid, role from URI SAN", f.v, f.ca.Issue(t, servertest.LeafOptions{CN: "plc-7", URIs: []string{"promcp:role:operator"}}), server.Caller{Name: "plc-7", Role: "operator"}, ""},
		{"valid, role from OU", ou.v, ou.ca.Issue(t, servertest.LeafOptions{CN: "dana", OU: []string{"Plant", "supervisor"}}), server.Caller{Name: "dana", Role: "supervisor"}, ""},
		{"wrong CA", f.v, f.rogue.Issue(t, servertest.LeafOptions{CN: "mallory", URIs: []string{"promcp:role:admin"}}), server.Caller{}, "the client certificate is not issued by a trusted CA"},
		{"expired", f.v, f.ca.Issue(t, servertest.LeafOptions{CN: "old", URIs: []string{"promcp:role:operator"}, NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)}), server.Caller{}, "the client certificate has expired or is not valid yet"},
		{"server certificate", f.v, f.ca.Issue(t, servertest.LeafOptions{CN: "web", URIs: []string{"promcp:role:operator"}, Server: true}), server.Caller{}, "the client certificate is not for client authentication"},
		{"no role", f.v, f.ca.Issue(t, servertest.LeafOptions{CN: "norole"}), server.Caller{}, "the client certificate holds no role this gateway declares"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.v.Verify([]*x509.Certificate{tc.leaf.Cert})
			if tc.reason == "" {
				if err != nil || c != tc.want {
					t.Fatalf("Verify = %+v, %v; want %+v", c, err, tc.want)
				}
				return
			}
			if ae, ok := errors.AsType[*server.AuthError](err); !ok || ae.Reason != tc.reason {
				t.Fatalf("Verify = %+v, %v; want refused: %s", c, err, tc.reason)
			}
		})
	}
	if _, err := f.v.Verify(nil); err == nil {
		t.Fatal("no certificate was accepted")
	}
}

// TestHTTPIdentityProviders: over TLS, one endpoint accepts a client
// certificate, a JWT and an opaque token; a request without a credential,
// or with a bad one, gets 401 whose WWW-Authenticate says why, and the
// log names the reason.
func TestHTTPIdentityProviders(t *testing.T) {
	jf := newJWTFixture(t, server.JWTConfig{RolesClaim: "promcp_role"})
	cf := newCertFixture(t, server.CertConfig{})
	opaque, tokens := operatorToken(t, "olive")
	tokens.AcceptJWT(jf.v)
	logs := &servertest.LogBuffer{}
	srv := newServer(t, "identity", server.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	cfg := server.HTTPConfig{Tokens: tokens, Certs: []*server.CertVerifier{cf.v}}
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = srv.HTTPServer(cfg)
	ts.TLS = server.ClientTLS(&tls.Config{}, cfg.Certs)
	ts.StartTLS()
	defer ts.Close()
	good := cf.ca.Issue(t, servertest.LeafOptions{CN: "plc-7", URIs: []string{"promcp:role:operator"}})
	rogue := cf.rogue.Issue(t, servertest.LeafOptions{CN: "mallory", URIs: []string{"promcp:role:admin"}})
	client := func(l *servertest.Leaf) *http.Client {
		c := ts.Client()
		tr := c.Transport.(*http.Transport).Clone()
		if l != nil {
			// Sent even when the server names other CAs (a client that
			// tries its luck).
			tr.TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				return &tls.Certificate{Certificate: [][]byte{l.Cert.Raw}, PrivateKey: l.Key}, nil
			}
		}
		return &http.Client{Transport: tr}
	}
	for _, tc := range []struct {
		name   string
		leaf   *servertest.Leaf
		token  string
		status int
		desc   string
	}{
		{"client certificate", good, "", http.StatusOK, ""},
		{"JWT", nil, jf.is.Token(t, claims("alice", "operator")), http.StatusOK, ""},
		{"opaque token", nil, opaque, http.StatusOK, ""},
		{"nothing", nil, "", http.StatusUnauthorized, "a credential is required"},
		{"rogue certificate", rogue, "", http.StatusUnauthorized, "the client certificate is not issued by a trusted CA"},
		{"rogue certificate, valid token", rogue, opaque, http.StatusOK, ""},
		{"unknown token", nil, "pmd_nope", http.StatusUnauthorized, "the bearer token is not valid"},
		{"expired JWT", nil, jf.is.Token(t, claims("alice", "operator", "exp", t0.Add(-time.Hour).Unix())), http.StatusUnauthorized, "the token has expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/mcp", strings.NewReader(initJSON))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			res, err := client(tc.leaf).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tc.status {
				t.Fatalf("status %d; want %d (WWW-Authenticate %q)", res.StatusCode, tc.status, res.Header.Get("WWW-Authenticate"))
			}
			if tc.desc != "" {
				if h := res.Header.Get("WWW-Authenticate"); !strings.Contains(h, `error_description="`+tc.desc+`"`) {
					t.Fatalf("WWW-Authenticate %q; want error_description %q", h, tc.desc)
				}
				if !strings.Contains(logs.String(), "refused a request: "+tc.desc) {
					t.Fatalf("the log does not give the reason %q:\n%s", tc.desc, logs.String())
				}
			}
		})
	}
}

// TestAuthenticateCaller: the caller of a request is the first provider's
// that accepts it: the certificate's, then the token's.
func TestAuthenticateCaller(t *testing.T) {
	jf := newJWTFixture(t, server.JWTConfig{RolesClaim: "promcp_role"})
	cf := newCertFixture(t, server.CertConfig{})
	tokens := server.NewTokens()
	tokens.AcceptJWT(jf.v)
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	tok := jf.is.Token(t, claims("alice", "admin"))
	r.Header.Set("Authorization", "Bearer "+tok)
	// The JWT is kept as the caller's credential, for a fleet endpoint to
	// forward with a routed call.
	if c, err := server.Authenticate(r, tokens, []*server.CertVerifier{cf.v}); err != nil || c != (server.Caller{Name: "alice", Role: "admin", Credential: tok}) {
		t.Fatalf("JWT alone: %+v, %v", c, err)
	}
	// Lookup (the console's, /metrics' and the fleet endpoint's check)
	// takes the JWT as well.
	if c, ok := tokens.Lookup(jf.is.Token(t, claims("alice", "admin"))); !ok || c.Name != "alice" {
		t.Fatalf("Lookup of a JWT: %+v, %t", c, ok)
	}
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cf.ca.Issue(t, servertest.LeafOptions{CN: "plc-7", URIs: []string{"promcp:role:viewer"}}).Cert}}
	if c, err := server.Authenticate(r, tokens, []*server.CertVerifier{cf.v}); err != nil || c != (server.Caller{Name: "plc-7", Role: "viewer"}) {
		t.Fatalf("certificate and JWT: %+v, %v; want the certificate's caller", c, err)
	}
}

// FuzzTokensCheck: no bearer token, however malformed, panics the check
// or is accepted.
func FuzzTokensCheck(f *testing.F) {
	jf := newJWTFixture(f, server.JWTConfig{RolesClaim: "promcp_role"})
	tokens := server.NewTokens()
	tokens.AcceptJWT(jf.v)
	f.Add(jf.is.Token(f, claims("alice", "operator", "exp", t0.Add(-time.Hour).Unix())))
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("eyJ.eyJ.")
	f.Add("pmd_abc")
	f.Fuzz(func(t *testing.T, tok string) {
		if c, err := tokens.Check(t.Context(), tok); err == nil {
			t.Fatalf("accepted %q as %+v", tok, c)
		}
	})
}

// BenchmarkJWTCheck is the cost of a bearer JWT (ES256) on every request.
func BenchmarkJWTCheck(b *testing.B) {
	f := newJWTFixture(b, server.JWTConfig{RolesClaim: "promcp_role"})
	tokens := server.NewTokens()
	tokens.AcceptJWT(f.v)
	tok := f.is.Token(b, claims("alice", "operator"))
	for b.Loop() {
		if _, err := tokens.Check(b.Context(), tok); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCertVerify is the cost of a client certificate on every request.
func BenchmarkCertVerify(b *testing.B) {
	ca := servertest.NewCA(b, "ca")
	file := filepath.Join(b.TempDir(), "ca.crt")
	os.WriteFile(file, ca.PEM, 0o600)
	v, err := server.NewCertVerifier(server.CertConfig{CAFile: file})
	if err != nil {
		b.Fatal(err)
	}
	chain := []*x509.Certificate{ca.Issue(b, servertest.LeafOptions{CN: "plc-7", URIs: []string{"promcp:role:operator"}}).Cert}
	for b.Loop() {
		if _, err := v.Verify(chain); err != nil {
			b.Fatal(err)
		}
	}
}
