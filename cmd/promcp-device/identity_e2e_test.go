package main

// PhysMCP §6 identity.providers through the binary: a policy declaring
// two jwt providers (keys from a file, and from the issuer's URL on a
// loopback test server) and an mtls provider; real MCP clients over
// HTTPS, with a JWT or a client certificate.

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/server/servertest"
)

// identitySite is a gateway serving the §5.3 PhysMCP manifest with a §6
// policy that declares identity providers.
type identitySite struct {
	url          string
	state        string
	log          func() string
	fileIss      *servertest.Issuer // keys in jwks.json beside the policy
	urlIss       *servertest.Issuer // keys at the issuer's JWKS URL
	ca, rogue    *servertest.CA
	roots        *x509.CertPool
	jwksRequests func() int
}

const identityAud = "physmcp-mesh"

func startIdentitySite(t *testing.T) *identitySite {
	t.Helper()
	dir, state := t.TempDir(), t.TempDir()
	s := &identitySite{state: state, fileIss: servertest.NewIssuer(t, "https://auth.example.com", "site-1"),
		urlIss: servertest.NewIssuer(t, "https://idp.example.org/realms/plant", "idp-1"),
		ca:     servertest.NewCA(t, "plant CA"), rogue: servertest.NewCA(t, "rogue CA")}
	var n atomic.Int32
	jwks := servertest.JWKS(t, s.urlIss)
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Write(jwks)
	}))
	t.Cleanup(idp.Close)
	s.jwksRequests = func() int { return int(n.Load()) }
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "physmcp.manifest.yml"), readFile(t, physmcp53), 0o600))
	must(os.WriteFile(filepath.Join(dir, "jwks.json"), servertest.JWKS(t, s.fileIss), 0o600))
	must(os.WriteFile(filepath.Join(dir, "ca.crt"), s.ca.PEM, 0o600))
	policy := string(readFile(t, filepath.Join(filepath.Dir(physmcp53), "physmcp.policy.yml"))) + `
# Identity providers for permission checks
identity:
  providers:
    - type: jwt
      issuer: "https://auth.example.com"
      audience: "physmcp-mesh"
      jwks_file: jwks.json
      roles_claim: promcp_role
    - type: jwt
      issuer: "https://idp.example.org/realms/plant"
      audience: "physmcp-mesh"
      jwks_url: "` + idp.URL + `/jwks"
      roles_claim: realm_access.roles
      name_claim: preferred_username
    - type: mtls
      ca_cert_path: ca.crt
`
	must(os.WriteFile(filepath.Join(dir, "physmcp.policy.yml"), []byte(policy), 0o600))
	srvCert, srvKey := s.ca.Issue(t, servertest.LeafOptions{CN: "gateway", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true}).WriteFiles(t, dir, "gateway")
	logw, log := logFile(t)
	s.log = log
	_, s.url = launch(t, os.Kill, logw, binary, `on (https://\S+/mcp)`, simServe("--http", "127.0.0.1:0",
		"--manifest", filepath.Join(dir, "physmcp.manifest.yml"), "--tls-cert", srvCert, "--tls-key", srvKey, "--state", state)...)
	if s.url == "" {
		t.Fatalf("serve printed no https URL:\n%s", log())
	}
	s.roots = x509.NewCertPool()
	s.roots.AddCert(s.ca.Cert)
	return s
}

// httpClient trusts the site's CA and presents leaf (none when nil).
func (s *identitySite) httpClient(leaf *servertest.Leaf) *http.Client {
	cfg := &tls.Config{RootCAs: s.roots, MinVersion: tls.VersionTLS12}
	if leaf != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &tls.Certificate{Certificate: [][]byte{leaf.Cert.Raw}, PrivateKey: leaf.Key}, nil
		}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
}

// mcp is an initialized MCP client over HTTPS with leaf and/or a bearer token.
func (s *identitySite) mcp(t *testing.T, leaf *servertest.Leaf, token string) *client.Client {
	t.Helper()
	opts := []transport.StreamableHTTPCOption{transport.WithHTTPBasicClient(s.httpClient(leaf))}
	if token != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	}
	c, err := client.NewStreamableHttpClient(s.url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "promcp-e2e", Version: "1"}}}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

func jwtClaims(sub string, more map[string]any) map[string]any {
	c := map[string]any{"sub": sub, "aud": identityAud, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range more {
		c[k] = v
	}
	return c
}

// TestServeIdentityProviders: the roles that the JWT's claim and the
// certificate's URI SAN carry decide the policy (a viewer's do_* is
// refused, an operator's acts), the audit names the JWT subject and the
// certificate's CN, and bad credentials get 401s that say why.
func TestServeIdentityProviders(t *testing.T) {
	s := startIdentitySite(t)
	viewerJWT := s.fileIss.Token(t, jwtClaims("vera@plant", map[string]any{"promcp_role": "viewer"}))
	operatorJWT := s.urlIss.Token(t, jwtClaims("5d0c-uuid", map[string]any{"preferred_username": "olga",
		"realm_access": map[string]any{"roles": []string{"offline_access", "operator"}}}))
	plc := s.ca.Issue(t, servertest.LeafOptions{CN: "plc-7", URIs: []string{"promcp:role:operator"}})
	do := func(c *client.Client, key string) map[string]any {
		t.Helper()
		body, err := callTool(t, c, "do_fan_mode_0", map[string]any{"value": "medium", "idempotency_key": key})
		if err != nil {
			t.Fatalf("do_fan_mode_0 %s: %v", key, err)
		}
		return body
	}

	vera := s.mcp(t, nil, viewerJWT)
	res, err := vera.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "read_fan_mode_0", Arguments: map[string]any{}}})
	if err != nil || res.IsError {
		t.Fatalf("viewer JWT read_fan_mode_0 = %v, %v; want a reading", res, err)
	}
	if b := do(vera, "vera-1"); b["status"] != "failed" || b["permission"] != "permission_insufficient" || !strings.Contains(fmt.Sprint(b["reason"]), "viewer") {
		t.Fatalf("viewer JWT do_fan_mode_0 = %v; want permission_insufficient", b)
	}
	if b := do(s.mcp(t, nil, operatorJWT), "olga-1"); b["status"] != "success" {
		t.Fatalf("operator JWT (keys from the issuer's URL) do_fan_mode_0 = %v; want success", b)
	}
	if b := do(s.mcp(t, plc, ""), "plc-1"); b["status"] != "success" {
		t.Fatalf("operator certificate do_fan_mode_0 = %v; want success", b)
	}
	who := map[string]string{}
	for _, r := range auditRecords(t, s.state) {
		who[r.Event+"/"+r.Key] = r.Caller + "/" + r.Role
	}
	if who["refused/vera-1"] != "vera@plant/viewer" || who["result/olga-1"] != "olga/operator" || who["result/plc-1"] != "plc-7/operator" {
		t.Fatalf("audit callers = %v; want vera's refusal, olga's and plc-7's results", who)
	}
	if n := s.jwksRequests(); n != 1 {
		t.Fatalf("the issuer's JWKS URL was fetched %d times; want 1 (at start, then cached)", n)
	}

	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." +
		base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"https://auth.example.com","sub":"mallory","aud":"physmcp-mesh","exp":9999999999,"promcp_role":"admin"}`)) + "."
	for _, tc := range []struct {
		name   string
		leaf   *servertest.Leaf
		token  string
		reason string
	}{
		{"no credential", nil, "", "a credential is required"},
		{"expired JWT", nil, s.fileIss.Token(t, jwtClaims("vera@plant", map[string]any{"promcp_role": "admin", "exp": time.Now().Add(-time.Hour).Unix()})), "the token has expired"},
		{"wrong audience", nil, s.fileIss.Token(t, jwtClaims("vera@plant", map[string]any{"promcp_role": "admin", "aud": "billing"})), "the token is not for this audience"},
		{"alg none", nil, none, "the token's signature algorithm is not allowed"},
		{"unknown issuer", nil, servertest.NewIssuer(t, "https://evil.example", "e").Token(t, jwtClaims("m", map[string]any{"promcp_role": "admin"})), "the token's issuer is not trusted"},
		{"certificate of another CA", s.rogue.Issue(t, servertest.LeafOptions{CN: "mallory", URIs: []string{"promcp:role:admin"}}), "", "the client certificate is not issued by a trusted CA"},
		{"expired certificate", s.ca.Issue(t, servertest.LeafOptions{CN: "old", URIs: []string{"promcp:role:operator"}, NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)}), "", "the client certificate has expired or is not valid yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.token != "" {
				h["Authorization"] = "Bearer " + tc.token
			}
			r := post(t, s.httpClient(tc.leaf), s.url, h, strings.NewReader(initBody))
			if r.StatusCode != http.StatusUnauthorized || !strings.Contains(r.Header.Get("WWW-Authenticate"), `error_description="`+tc.reason+`"`) {
				t.Fatalf("status %d, WWW-Authenticate %q; want 401 saying %q", r.StatusCode, r.Header.Get("WWW-Authenticate"), tc.reason)
			}
		})
	}
	if l := s.log(); !strings.Contains(l, "refused a request: the token has expired") || !strings.Contains(l, "refused a request: the client certificate is not issued by a trusted CA") {
		t.Fatalf("the log does not give the reasons:\n%s", l)
	}
	if l := s.log(); !strings.Contains(l, "identity: a client certificate does not travel with a routed fleet call") {
		t.Fatalf("the log does not say what of §6 identity is not honoured:\n%s", l)
	}
}

// TestServeIdentityNeedsTLS: an mtls provider without --tls-cert is a
// usage error; a JWKS file that is missing names the policy line.
func TestServeIdentityNeedsTLS(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "physmcp.manifest.yml"), readFile(t, physmcp53), 0o600)
	os.WriteFile(filepath.Join(dir, "ca.crt"), servertest.NewCA(t, "ca").PEM, 0o600)
	base := string(readFile(t, filepath.Join(filepath.Dir(physmcp53), "physmcp.policy.yml")))
	for _, tc := range []struct {
		name, providers string
		code            int
		want            string
	}{
		{"mtls without TLS", "    - {type: mtls, ca_cert_path: ca.crt}\n", 2, "serve HTTPS with --tls-cert and --tls-key"},
		{"missing JWKS file", "    - {type: jwt, issuer: i, audience: a, jwks_file: nowhere.json}\n", 1, "physmcp.policy.yml:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.WriteFile(filepath.Join(dir, "physmcp.policy.yml"), []byte(base+"identity:\n  providers:\n"+tc.providers), 0o600)
			_, stderr, code := runCLI(t, simServe("--http", "127.0.0.1:0", "--manifest", filepath.Join(dir, "physmcp.manifest.yml"))...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, %q; want exit %d and %q", code, stderr, tc.code, tc.want)
			}
		})
	}
}

// TestLintIdentityNote: lint accepts a policy's identity providers and
// warns, at the identity block, of what of §6 is not honoured yet.
func TestLintIdentityNote(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "physmcp.manifest.yml"), readFile(t, physmcp53), 0o600)
	base := string(readFile(t, filepath.Join(filepath.Dir(physmcp53), "physmcp.policy.yml")))
	line := strings.Count(base, "\n") + 1
	os.WriteFile(filepath.Join(dir, "physmcp.policy.yml"), []byte(base+"identity:\n  providers:\n    - {type: jwt, issuer: i, audience: a, jwks_url: \"https://i/jwks\"}\n"), 0o600)
	stdout, _, code := runCLI(t, "lint", filepath.Join(dir, "physmcp.manifest.yml"))
	want := filepath.Join(dir, "physmcp.policy.yml") + ":" + strconv.Itoa(line+1) + ":3: warning: identity: a client certificate does not travel with a routed fleet call"
	if code != 0 || !strings.Contains(stdout, want) {
		t.Fatalf("lint: exit %d\n%s\nwant exit 0 and %q", code, stdout, want)
	}
}
