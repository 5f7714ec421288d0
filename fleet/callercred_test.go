package fleet_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/fleet"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/server/servertest"
)

const credAud = "promcp-site"

// jwtTokens are tokens that accept the JWTs of is for credAud (a policy's
// jwt identity provider).
func jwtTokens(t *testing.T, is *servertest.Issuer) *server.Tokens {
	t.Helper()
	f := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(f, servertest.JWKS(t, is), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := server.NewJWTVerifier(server.JWTConfig{Issuer: is.URL, Audience: credAud, JWKSFile: f})
	if err != nil {
		t.Fatal(err)
	}
	tok := server.NewTokens()
	tok.AcceptJWT(v)
	return tok
}

func jwtOf(t *testing.T, is *servertest.Issuer, sub, role string, more ...any) string {
	c := map[string]any{"sub": sub, "aud": credAud, "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Add(-time.Minute).Unix(), "roles": role}
	for i := 0; i+1 < len(more); i += 2 {
		c[more[i].(string)] = more[i+1]
	}
	return is.Token(t, c)
}

// bearerClient opens an MCP session on url with a bearer token.
func bearerClient(t *testing.T, url, token string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "fleet-test", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	return c
}

// routedDo calls tool on gw through v as the caller in ctx and decodes
// the do result.
func routedDoAs(t *testing.T, v *fleet.View, c server.Caller, gw, tool, key string) (promcp.DoResult, *mcp.CallToolResult) {
	t.Helper()
	ctx := server.WithCaller(t.Context(), c)
	res, err := v.Call(ctx, gw, tool, json.RawMessage(`{"value":true,"idempotency_key":"`+key+`"}`), 10*time.Second)
	if err != nil {
		t.Fatalf("%s on %s: %v", tool, gw, err)
	}
	var do promcp.DoResult
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &do)
	return do, res
}

// A caller's JWT travels with the routed call and the owning gateway
// verifies it itself: a valid one acts as its subject and role (capped by
// the route), whatever the entry node claims beside it; a forged, expired
// or other-audience JWT is refused by the owning gateway although the
// entry node forwarded it; with require_caller_credential a call without
// one is refused.
func TestFleetTrustCallerCredential(t *testing.T) {
	h := startHub(t, false)
	is := servertest.NewIssuer(t, "https://idp.example", "k1")
	forger := servertest.NewIssuer(t, "https://idp.example", "k1")
	gw1 := startGateway(t, "gw1", "north", h.leafURLs[0], false, func(c *fleet.MemberConfig) {
		c.Routes = map[string]string{"hub1": server.RoleSupervisor}
		c.Credentials = jwtTokens(t, is)
	})
	gw2 := startGateway(t, "gw2", "south", h.leafURLs[1], false, func(c *fleet.MemberConfig) {
		c.Routes = map[string]string{"hub1": server.RoleSupervisor}
		c.Credentials, c.RequireCredential = jwtTokens(t, is), true
	})
	v := watchAll(t, h.nc, "hub1", manifests.RoleHub, 2, nil)

	// Through hub1's fleet endpoint, which authenticates the JWT and
	// forwards it: gw1 acts as alice (operator), verified itself.
	_, url := endpoint(t, v, fleet.EndpointConfig{Version: "test", Tokens: jwtTokens(t, is)})
	alice := bearerClient(t, url+"/mcp/gw1", jwtOf(t, is, "alice", server.RoleOperator))
	var do promcp.DoResult
	if call(t, alice, "do_gw1_set_pump", map[string]any{"value": true, "idempotency_key": "alice-1"}, &do); do.Status != promcp.StatusSuccess {
		t.Fatalf("alice's routed do = %+v, want success", do)
	}

	// A claimed admin beside a viewer's JWT acts as the viewer.
	do, _ = routedDoAs(t, v, server.Caller{Name: "mallory", Role: server.RoleAdmin, Credential: jwtOf(t, is, "bob", server.RoleViewer)}, "gw1", "do_set_pump", "bob-1")
	if do.Status == promcp.StatusSuccess || do.Permission != promcp.PermissionInsufficient {
		t.Fatalf("admin claimed beside a viewer JWT = %+v, want permission_insufficient", do)
	}
	want := []server.Caller{{Name: "alice", Role: server.RoleOperator, Via: "hub1, verified jwt"}, {Name: "bob", Role: server.RoleViewer, Via: "hub1, verified jwt"}}
	if got := gw1.local.Callers(); !slices.Equal(got, want) {
		t.Fatalf("gw1 ran the calls as %+v, want %+v", got, want)
	}

	// Credentials the entry node forwarded but gw1 does not accept.
	bad := []struct{ name, token, why string }{
		{"forged", jwtOf(t, forger, "mallory", server.RoleAdmin), "the token's signature does not verify with the issuer's keys"},
		{"expired", jwtOf(t, is, "carol", server.RoleOperator, "exp", time.Now().Add(-time.Hour).Unix()), "the token has expired"},
		{"other audience", jwtOf(t, is, "carol", server.RoleOperator, "aud", "another-site"), "the token is not for this audience"},
	}
	for i, b := range bad {
		do, res := routedDoAs(t, v, server.Caller{Name: "carol", Role: server.RoleOperator, Credential: b.token}, "gw1", "do_set_pump", "bad-"+b.name)
		if !res.IsError || do.Status != promcp.StatusFailed || do.Error == nil || do.Error.Code != promcp.CodeRefused ||
			!strings.Contains(do.Error.Message, "gateway gw1 refused do_set_pump through hub1") || !strings.Contains(do.Error.Message, b.why) {
			t.Errorf("%s JWT: %+v (error %+v), want refused by gw1 because %q", b.name, do, do.Error, b.why)
		}
		if n := len(gw1.local.Callers()); n != 2 {
			t.Fatalf("%s JWT: gw1 ran %d calls, want still 2 (nothing run) after %d refusals", b.name, n, i+1)
		}
	}
	refusedRecs := 0
	for _, r := range gw1.audit.Records() {
		if r.Event == "refused" && r.Via == "hub1, caller credential refused" && r.Caller == "carol" {
			refusedRecs++
		}
	}
	if refusedRecs != len(bad) {
		t.Errorf("gw1's audit has %d refused credential records, want %d: %+v", refusedRecs, len(bad), gw1.audit.Records())
	}
	verified := 0
	for _, r := range gw1.audit.Records() {
		if r.Via == "hub1, verified jwt" && r.Caller == "alice" && r.Role == server.RoleOperator {
			verified++
		}
	}
	if verified == 0 {
		t.Errorf("gw1's audit names no verified caller alice: %+v", gw1.audit.Records())
	}

	// gw2 requires a credential: a call without one is refused, one with
	// a valid JWT runs.
	do, res := routedDoAs(t, v, server.Caller{Name: "sue", Role: server.RoleOperator}, "gw2", "do_set_pump", "sue-1")
	if !res.IsError || do.Error == nil || !strings.Contains(do.Error.Message, "requires a caller credential") {
		t.Fatalf("no credential to gw2 = %+v (error %+v), want refused", do, do.Error)
	}
	if do, _ = routedDoAs(t, v, server.Caller{Name: "sue", Role: server.RoleOperator, Credential: jwtOf(t, is, "sue", server.RoleOperator)}, "gw2", "do_set_pump", "sue-2"); do.Status != promcp.StatusSuccess {
		t.Fatalf("sue's JWT to gw2 = %+v, want success", do)
	}
	if got, want := gw2.local.Callers(), []server.Caller{{Name: "sue", Role: server.RoleOperator, Via: "hub1, verified jwt"}}; !slices.Equal(got, want) {
		t.Fatalf("gw2 ran the calls as %+v, want %+v", got, want)
	}
}
