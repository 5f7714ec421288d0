package manifests

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// TestPolicyIdentity: the identity block of a PhysMCP policy (§6, with
// our keys for the issuer's keys and the role claim) and of our own
// policy format decode alike, positioned in the file as written, with a
// note of what is not honoured yet.
func TestPolicyIdentity(t *testing.T) {
	m, _ := loadPhysMCP(t, "testdata/physmcp/spec53")
	block := "identity:\n" +
		"  providers:\n" +
		"    - type: jwt\n" +
		"      issuer: \"https://auth.example.com\"\n" +
		"      audience: \"physmcp-mesh\"\n" +
		"      jwks_file: keys/jwks.json\n" +
		"      roles_claim: realm_access.roles\n" +
		"      algorithms: [RS256, EdDSA]\n" +
		"      leeway: 10s\n" +
		"    - type: mtls\n" +
		"      ca_cert_path: \"/etc/physmcp/ca.crt\"\n" +
		"      role_from: ou\n"
	for name, doc := range map[string]string{
		"physmcp": "physmcp_policy_version: \"0.1\"\n" + block,
		"native":  "version: 1\n" + block,
	} {
		t.Run(name, func(t *testing.T) {
			pol, err := ParsePolicy("/site/p.policy.yml", []byte(doc), m)
			if err != nil {
				t.Fatal(err)
			}
			if pol.Identity == nil || len(pol.Identity.Providers) != 2 {
				t.Fatalf("identity %+v; want two providers", pol.Identity)
			}
			j, c := pol.Identity.Providers[0], pol.Identity.Providers[1]
			if j.Type != ProviderJWT || j.Issuer != "https://auth.example.com" || j.Audience != "physmcp-mesh" || j.RolesClaim != "realm_access.roles" ||
				j.Leeway != 10*time.Second || strings.Join(j.Algorithms, ",") != "RS256,EdDSA" || pol.Path(j.JWKSFile) != "/site/keys/jwks.json" {
				t.Fatalf("jwt provider %+v", j)
			}
			if c.Type != ProviderMTLS || c.CACertPath != "/etc/physmcp/ca.crt" || c.RoleFrom != "ou" {
				t.Fatalf("mtls provider %+v", c)
			}
			if got := j.Pos.String(); got != "/site/p.policy.yml:4:7" {
				t.Fatalf("jwt provider at %s; want /site/p.policy.yml:4:7", got)
			}
			if len(pol.Notes) != 1 || !strings.HasPrefix(pol.Notes[0].String(), "/site/p.policy.yml:3:3: identity: a client certificate does not travel with a routed fleet call") {
				t.Fatalf("notes %v; want one at identity", pol.Notes)
			}
		})
	}
}

// TestPolicyIdentityErrors: what cannot be verified safely is refused
// where it is written.
func TestPolicyIdentityErrors(t *testing.T) {
	m, _ := loadPhysMCP(t, "testdata/physmcp/spec53")
	for _, tc := range []struct {
		name, providers string
		sentinel        error
		where           string
	}{
		{"PhysMCP's example names no keys", `[{type: jwt, issuer: "https://auth.example.com", audience: physmcp-mesh}]`, ErrMissing, "3:15 identity.providers[0]"},
		{"alg none", `[{type: jwt, issuer: i, audience: a, jwks_file: k, algorithms: [none]}]`, ErrNotAllowed, "3:78 identity.providers[0].algorithms[0]"},
		{"HMAC", `[{type: jwt, issuer: i, audience: a, jwks_file: k, algorithms: [ES256, HS256]}]`, ErrNotAllowed, "3:85 identity.providers[0].algorithms[1]"},
		{"jwks over plain http", `[{type: jwt, issuer: i, audience: a, jwks_url: "http://auth.example.com/jwks"}]`, ErrNotAllowed, "3:61 identity.providers[0].jwks_url"},
		{"no audience", `[{type: jwt, issuer: i, jwks_file: k}]`, ErrMissing, "3:15 identity.providers[0].audience"},
		{"issuer on mtls", `[{type: mtls, ca_cert_path: ca.crt, issuer: i}]`, ErrNotAllowed, "3:58 identity.providers[0].issuer"},
		{"mtls without CA", `[{type: mtls}]`, ErrMissing, "3:15 identity.providers[0].ca_cert_path"},
		{"unknown type", `[{type: oauth}]`, ErrUnknownValue, "3:22 identity.providers[0].type"},
		{"long leeway", `[{type: jwt, issuer: i, audience: a, jwks_file: k, leeway: 1h}]`, ErrRange, "3:73 identity.providers[0].leeway"},
	} {
		for _, head := range []string{"physmcp_policy_version: \"0.1\"\n", "version: 1\n"} {
			if tc.sentinel == ErrMissing && strings.HasPrefix(head, "physmcp") && strings.Contains(tc.name, "no keys") {
				continue // noted, not refused: see TestPhysMCPSpec6
			}
			t.Run(tc.name+"/"+strings.Fields(head)[0], func(t *testing.T) {
				doc := head + "identity:\n  providers: " + tc.providers + "\n"
				_, err := ParsePolicy("p.yml", []byte(doc), m)
				var e *Error
				if !errors.As(err, &e) || !errors.Is(e, tc.sentinel) {
					t.Fatalf("got %v; want %v", err, tc.sentinel)
				}
				if got := strings.TrimPrefix(e.Pos.String(), "p.yml:") + " " + e.Field; got != tc.where {
					t.Fatalf("at %q (%v); want %q", got, e, tc.where)
				}
			})
		}
	}
}

// TestConvertKeepsIdentity: convert writes the identity block into our
// policy format.
func TestConvertKeepsIdentity(t *testing.T) {
	pm := []byte("physmcp_policy_version: \"0.1\"\nidentity:\n  providers:\n    - {type: jwt, issuer: i, audience: a, jwks_url: \"https://i/jwks\", roles_claim: promcp_role}\n    - {type: mtls, ca_cert_path: ca.crt}\n")
	data, err := os.ReadFile("testdata/physmcp/spec53/physmcp.manifest.yml")
	if err != nil {
		t.Fatal(err)
	}
	_, pol, err := ConvertPhysMCP("physmcp.manifest.yml", data, "physmcp.policy.yml", pm, "p.policy.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"identity:", "type: jwt", "jwks_url: https://i/jwks", "roles_claim: promcp_role", "ca_cert_path: ca.crt"} {
		if !strings.Contains(string(pol), want) {
			t.Fatalf("converted policy lacks %q:\n%s", want, pol)
		}
	}
}
