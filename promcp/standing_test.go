package promcp_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/promcp"
)

// TestResolveEnvelope: a reference resolves to the published warrant and
// the standing lines in its place, with the call's driver and model over
// the published ones; a text whose hash is not the reference's digest, a
// digest that is not the one tools/list gives, a standing part of another
// tool and an unknown rebuttal reference are errors.
func TestResolveEnvelope(t *testing.T) {
	st := promcp.Standing{Tool: "read_x", Warrant: promcp.Warrant{Manifest: "sha256:m", Driver: "i2c", Model: "sht3x",
		Contract: "proMCP v0.2", OutputSchema: "sha256:o"}, Rebuttal: []string{"health a", "health b"}}
	text, digest := st.Encode()
	uri := promcp.WarrantURI("read_x")
	env := func(warrant map[string]any, rebuttal ...any) map[string]any {
		b, _ := json.Marshal(map[string]any{promcp.EnvelopeTool: "read_x", promcp.EnvelopeToulmin: map[string]any{
			"claim": "c", "grounds": map[string]any{}, "qualifier": map[string]any{}, "warrant": warrant, "rebuttal": rebuttal}})
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return m
	}
	read := func(got []byte) func(string) ([]byte, error) {
		return func(u string) ([]byte, error) {
			if u != uri {
				return nil, errors.New("no such resource")
			}
			return got, nil
		}
	}
	e := env(map[string]any{"ref": uri, "digest": digest}, "stale after t", promcp.RebuttalRef("read_x"))
	if ref, err := promcp.ResolveEnvelope(e, read(text), map[string]string{uri: digest}); err != nil || !ref {
		t.Fatalf("resolve: %t %v", ref, err)
	}
	tl := e[promcp.EnvelopeToulmin].(map[string]any)
	if w := tl["warrant"].(map[string]any); w["driver"] != "i2c" || w["manifest"] != "sha256:m" || len(w) != 6 {
		t.Errorf("warrant %v", w)
	}
	if r := tl["rebuttal"]; !reflect.DeepEqual(r, []any{"stale after t", "health a", "health b"}) {
		t.Errorf("rebuttal %v", r)
	}
	e = env(map[string]any{"ref": uri, "digest": digest, "driver": "policy", "model": "policy"})
	if _, err := promcp.ResolveEnvelope(e, read(text), nil); err != nil {
		t.Fatal(err)
	}
	if w := e[promcp.EnvelopeToulmin].(map[string]any)["warrant"].(map[string]any); w["driver"] != "policy" || w["model"] != "policy" {
		t.Errorf("the call's driver and model do not stand: %v", w)
	}
	if ref, err := promcp.ResolveEnvelope(env(map[string]any{"manifest": ""}, "x"), read(text), nil); err != nil || ref {
		t.Errorf("a warrant in full: %t %v", ref, err)
	}
	other, otherDigest := promcp.Standing{Tool: "read_y"}.Encode()
	tampered := []byte(strings.Replace(string(text), "health a", "health A", 1))
	for _, bad := range []struct {
		name string
		env  map[string]any
		text []byte
		want map[string]string
		msg  string
	}{
		{"tampered", env(map[string]any{"ref": uri, "digest": digest}), tampered, nil, "hashes to"},
		{"not tools/list's", env(map[string]any{"ref": uri, "digest": digest}), text, map[string]string{uri: "sha256:0"}, "tools/list gives"},
		{"another tool's", env(map[string]any{"ref": uri, "digest": otherDigest}), other, nil, "not of read_x"},
		{"unknown rebuttal ref", env(map[string]any{"ref": uri, "digest": digest}, promcp.RebuttalRef("read_z")), text, nil, "does not refer"},
		{"rebuttal ref without a warrant ref", env(map[string]any{}, promcp.RebuttalRef("read_x")), text, nil, "not a reference"},
		{"unresolvable", env(map[string]any{"ref": promcp.WarrantURI("read_q"), "digest": digest}), text, nil, "no such resource"},
	} {
		if _, err := promcp.ResolveEnvelope(bad.env, read(bad.text), bad.want); err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%s: error %v, want one saying %q", bad.name, err, bad.msg)
		}
	}
}
