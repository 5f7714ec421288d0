package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// TestRolesSayWhoActs: with WithRoles, read-only is what the policy
// declares, not the name viewer: a read-only auditor is refused, viewer
// declared as an actor acts, and a role the policy does not declare (the
// misspelt veiwer) is refused with words that say so.
func TestRolesSayWhoActs(t *testing.T) {
	srv, _, _, writes := deskServer(t, server.WithRoles(server.Roles{
		Declared: []string{"viewer", "operator", "auditor"}, ReadOnly: []string{"auditor"}}))
	for _, c := range []struct {
		role, want string
		acts       bool
	}{
		{"auditor", `role "auditor" is read-only in the policy`, false},
		{"veiwer", `role "veiwer" is not declared by the policy, so it may not act (declared: viewer, operator, auditor)`, false},
		{"viewer", "", true}, // declared read_only: false
		{"operator", "", true},
	} {
		before := *writes
		r := doAs(t, srv, server.Caller{Name: "x", Role: c.role}, 50, "k-"+c.role)
		if c.acts != (r.Status == promcp.StatusSuccess) || c.acts != (*writes == before+1) {
			t.Errorf("%s: %+v (writes %d → %d); want acting %t", c.role, r, before, *writes, c.acts)
		}
		if !c.acts && (r.Permission != promcp.PermissionInsufficient || !strings.Contains(r.Error.Message, c.want)) {
			t.Errorf("%s: refused %s %q; want permission_insufficient saying %q", c.role, r.Permission, r.Error.Message, c.want)
		}
	}
}

// TestUndeclaredTokenRoleIsForbiddenWithReason: a token line added while
// the gateway runs, whose role the policy does not declare, is refused 403
// with a message naming the token's name and role, not a bare "invalid
// token".
func TestUndeclaredTokenRoleIsForbiddenWithReason(t *testing.T) {
	tok := server.NewToken()
	tokens, err := server.ParseTokens("tokens", strings.NewReader(server.TokenLine("bob", "veiwer", tok)))
	if err != nil {
		t.Fatal(err)
	}
	_ = tokens.CheckRoles([]string{"viewer", "operator"}) // reported at start; the line stays refused
	ts := httptest.NewServer(newServer(t, "roles").HTTPServer(server.HTTPConfig{Tokens: tokens}).Handler)
	t.Cleanup(ts.Close)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/mcp", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error struct{ Message string } `json:"error"`
	}
	_ = json.NewDecoder(res.Body).Decode(&body)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || !strings.Contains(body.Error.Message, `the token of bob has role "veiwer", which the policy does not declare`) {
		t.Fatalf("status %d, message %q; want 403 naming bob and veiwer", res.StatusCode, body.Error.Message)
	}
}
