package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/internal/mcpread"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/server/servertest"
)

// envelopeServer is a library server (no gateway, no evidence from its
// handlers) with a read that may fail, a read whose handler breaks the
// contract, a do_* and can_do, served in placement; with surface, the
// tools are served on a Surface of it (a tool group), which must stamp
// alike.
func envelopeServer(t *testing.T, placement server.Placement, surface bool) *client.Client {
	t.Helper()
	srv, err := server.New("tank", "1", server.WithProvenance(placement), server.WithWarrant("sha256:m", ""),
		server.WithClock(fixedClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))))
	if err != nil {
		t.Fatal(err)
	}
	if surface {
		if srv, err = srv.Surface("tank-group", ""); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(srv.Read(server.ReadTool{Name: "read_level", Unit: "%", Value: map[string]any{"type": "number"}, Source: "tank/level"},
		func(context.Context, server.ReadRequest) (promcp.ReadResult, error) {
			return promcp.ReadResult{Value: 42.0, Unit: "%", Quality: promcp.QualityGood}, nil
		}))
	must(srv.Read(server.ReadTool{Name: "read_dead", Unit: "%", Source: "tank/dead"},
		func(context.Context, server.ReadRequest) (promcp.ReadResult, error) {
			return promcp.ReadResult{}, errors.New("no answer")
		}))
	must(srv.Read(server.ReadTool{Name: "read_broken", Unit: "%", Source: "tank/broken"},
		func(context.Context, server.ReadRequest) (promcp.ReadResult, error) {
			return promcp.ReadResult{Unit: "bar", Quality: "fine"}, nil
		}))
	must(srv.Do(server.DoTool{Name: "do_fill", Value: map[string]any{"type": "number"}, Source: "tank/valve"},
		func(_ context.Context, req server.DoRequest) (promcp.DoResult, error) {
			return promcp.DoResult{Status: promcp.StatusSuccess, AppliedValue: req.Value}, nil
		}))
	must(srv.CanDo("What can be done.", func(context.Context, promcp.CanDoRequest) (promcp.CapabilityReport, error) {
		return promcp.CapabilityReport{}, nil
	}))
	return servertest.Client(t, srv, mcp.InitializeParams{})
}

// TestEnvelopeOnEveryKind: without any evidence from its handlers, a
// library server's every result, errors and a replaced body included,
// carries the envelope complete, as JSON, in the placement asked for, and
// a replay is tagged so.
func TestEnvelopeOnEveryKind(t *testing.T) {
	for _, tc := range []struct {
		placement server.Placement
		surface   bool
	}{{server.ProvenanceMeta, false}, {server.ProvenanceInline, false}, {server.ProvenanceMeta, true}, {server.ProvenanceInline, true}} {
		placement := tc.placement
		t.Run(fmt.Sprintf("%s/surface=%t", placement, tc.surface), func(t *testing.T) {
			c := envelopeServer(t, placement, tc.surface)
			want := standingDigests(t, c)
			call := func(name string, args map[string]any) (env map[string]any) {
				t.Helper()
				res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
				if err != nil {
					t.Fatal(err)
				}
				var wire struct {
					Meta              map[string]map[string]any `json:"_meta"`
					StructuredContent map[string]any            `json:"structuredContent"`
				}
				b, _ := json.Marshal(res)
				if err := json.Unmarshal(b, &wire); err != nil {
					t.Fatal(err)
				}
				env = wire.Meta[server.ProvenanceKey]
				if placement == server.ProvenanceInline {
					env = wire.StructuredContent
					if _, in := wire.Meta[server.ProvenanceKey][promcp.EnvelopeToulmin]; in {
						t.Errorf("%s: the envelope is inline and in _meta", name)
					}
				} else if _, in := wire.StructuredContent[promcp.EnvelopeToulmin]; in {
					t.Errorf("%s: the envelope is in _meta and in the body", name)
				}
				if ok, why := promcp.IsStamped(env); !ok || env[promcp.EnvelopeTool] != name {
					t.Fatalf("%s(%v): envelope %v: %s", name, args, env, why)
				}
				// Every result refers to its tool's standing part: it
				// resolves, and its digest is the one tools/list gives.
				if ref, err := promcp.ResolveEnvelope(env, readText(t, c), want); err != nil || !ref {
					t.Fatalf("%s(%v): references (%t): %v", name, args, ref, err)
				}
				return env
			}
			tags := func(env map[string]any) map[string]any { return env[promcp.EnvelopeTags].(map[string]any) }
			arg := func(env map[string]any, key string) any { return env[promcp.EnvelopeToulmin].(map[string]any)[key] }

			env := call("read_level", map[string]any{})
			if g := arg(env, "grounds").(map[string]any); g["source"] != "tank/level" || g["sampled_at"] != "2026-11-30T12:00:00Z" {
				t.Errorf("read_level grounds %v", g)
			}
			if w := arg(env, "warrant").(map[string]any); w["manifest"] != "sha256:m" || w["contract"] != "proMCP v0.2" {
				t.Errorf("read_level warrant %v", w)
			}
			env = call("read_dead", map[string]any{})
			if q := arg(env, "qualifier").(map[string]any); q["quality"] != "error" || q["reason"] != "no answer" || tags(env)["origin"] != "server" {
				t.Errorf("read_dead: qualifier %v tags %v", q, tags(env))
			}
			env = call("read_broken", map[string]any{})
			if tg := tags(env); tg["check"] != "replaced" || tg["origin"] != "server" {
				t.Errorf("read_broken: tags %v, want check replaced", tg)
			}
			args := map[string]any{"value": 5.0, "idempotency_key": "k1"}
			if tg := tags(call("do_fill", args)); tg["freshness"] != "live" || tg["bucket"] != "real_dispatch" {
				t.Errorf("do_fill: tags %v", tg)
			}
			if tg := tags(call("do_fill", args)); tg["freshness"] != "replayed" || tg["origin"] != "server" {
				t.Errorf("do_fill replayed: tags %v", tg)
			}
			if tg := tags(call("do_fill", map[string]any{"value": "x"})); tg["origin"] != "server" {
				t.Errorf("do_fill with a bad value: tags %v", tg)
			}
			env = call("can_do", map[string]any{"intent": map[string]any{"action": "do_fill"}})
			if g := arg(env, "grounds").(map[string]any); g["intent"].(map[string]any)["action"] != "do_fill" || g["scope"] != "local" {
				t.Errorf("can_do grounds %v", g)
			}
			if w := arg(env, "warrant").(map[string]any); w["driver"] != "policy" || w["model"] != "policy" {
				t.Errorf("can_do warrant %v", w)
			}
			if r := arg(env, "rebuttal").([]any); len(r) == 0 || r[len(r)-1] != "a reading, a reservation or another caller's action may change the policy's answer before do_* is called" {
				t.Errorf("can_do rebuttal %v: the standing line is not resolved", r)
			}
		})
	}
}

// standingDigests are the digests of the tools' standing parts by URI, as
// tools/list gives them (_meta promcp.WarrantMetaKey); every tool has one.
func standingDigests(t *testing.T, c *client.Client) map[string]string {
	t.Helper()
	list, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, tool := range list.Tools {
		var m map[string]string
		if tool.Meta != nil {
			b, _ := json.Marshal(tool.Meta.AdditionalFields[promcp.WarrantMetaKey])
			_ = json.Unmarshal(b, &m)
		}
		if m["uri"] != promcp.WarrantURI(tool.Name) || m["digest"] == "" {
			t.Fatalf("tools/list: %s has no standing part in _meta: %v", tool.Name, tool.Meta)
		}
		out[m["uri"]] = m["digest"]
	}
	return out
}

// readText reads a resource's text with resources/read.
func readText(t *testing.T, c *client.Client) func(uri string) ([]byte, error) {
	return func(uri string) ([]byte, error) { return mcpread.Text(t.Context(), c, uri) }
}

// TestProvenancePlacementChecked: an unknown placement is an error.
func TestProvenancePlacementChecked(t *testing.T) {
	if _, err := server.New("x", "1", server.WithProvenance("body")); err == nil {
		t.Fatal("placement body accepted")
	}
}

// TestStampReuse: a read whose body is the same as the previous call's
// but whose evidence is not (a cached sample: cached true) gets its own
// stamp; the same body and evidence again get the same stamp; a new body
// a new digest. Over the wire, as a client sees it.
func TestStampReuse(t *testing.T) {
	srv, err := server.New("tank", "1")
	if err != nil {
		t.Fatal(err)
	}
	sampled := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	calls := 0
	err = srv.Read(server.ReadTool{Name: "read_level", Unit: "%", Value: map[string]any{"type": "number"}, Source: "tank/level"},
		func(context.Context, server.ReadRequest) (promcp.ReadResult, error) {
			calls++
			v := 42.0
			if calls == 4 {
				v = 43
			}
			at := sampled
			g := &promcp.ReadGrounds{Source: "tank/level", Raw: "2a", SampledAt: &at, Cached: calls > 1}
			return promcp.ReadResult{Value: v, Unit: "%", Quality: promcp.QualityGood, Timestamp: sampled,
				Evidence: &promcp.Evidence{Grounds: g, Driver: "sim", Model: "tank"}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	c := servertest.Client(t, srv, mcp.InitializeParams{})
	stamp := func() (map[string]any, string) {
		res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "read_level", Arguments: map[string]any{}}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		var wire struct {
			Meta map[string]map[string]any `json:"_meta"`
		}
		if err := json.Unmarshal(b, &wire); err != nil {
			t.Fatal(err)
		}
		s := wire.Meta[server.ProvenanceKey]
		if ok, why := promcp.IsStamped(s); !ok {
			t.Fatalf("stamp %v: %s", s, why)
		}
		raw, _ := json.Marshal(s)
		return s, string(raw)
	}
	cached := func(s map[string]any) any {
		return s[promcp.EnvelopeToulmin].(map[string]any)["grounds"].(map[string]any)["cached"]
	}
	s1, raw1 := stamp()
	s2, raw2 := stamp()
	_, raw3 := stamp()
	s4, _ := stamp()
	if cached(s1) != false || cached(s2) != true {
		t.Errorf("grounds.cached = %v then %v, want false then true", cached(s1), cached(s2))
	}
	if raw1 == raw2 || raw2 != raw3 {
		t.Errorf("stamps: first == second %t (want false), second == third %t (want true)", raw1 == raw2, raw2 == raw3)
	}
	if s4["body"] == s2["body"] || s4["checked"] != "typed" || s4["tool"] != "read_level" || s4["kind"] != "read" {
		t.Errorf("stamp of a new value %v: want a new body digest, checked typed, tool and kind", s4)
	}
}

// TestCachedReadEncodedOnce: a read answered with the same body and
// evidence as the call before (a cached sample read again) is sent as the
// bytes encoded for that call, shared: neither the body nor its stamp is
// encoded again; each call still gets its own result and _meta map (mcp-go
// adds to _meta). A new value is encoded anew.
func TestCachedReadEncodedOnce(t *testing.T) {
	srv, err := server.New("tank", "1")
	if err != nil {
		t.Fatal(err)
	}
	sampled := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	value := 42.0
	err = srv.Read(server.ReadTool{Name: "read_level", Unit: "%", Value: map[string]any{"type": "number"}, Source: "tank/level",
		Standing: server.Standing{Driver: "sim", Model: "tank", Rebuttal: []string{"a health rule"}}},
		func(context.Context, server.ReadRequest) (promcp.ReadResult, error) {
			at := sampled
			g := &promcp.ReadGrounds{Source: "tank/level", Raw: "2a", SampledAt: &at, Cached: true}
			return promcp.ReadResult{Value: value, Unit: "%", Quality: promcp.QualityGood, Timestamp: sampled,
				Evidence: &promcp.Evidence{Grounds: g, Driver: "sim", Model: "tank", Rebuttal: []string{"stale soon", "a health rule"}}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	h := srv.MCP().GetTool("read_level").Handler
	call := func() *mcp.CallToolResult {
		res, err := h(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "read_level", Arguments: map[string]any{}}})
		if err != nil || res.IsError {
			t.Fatalf("read_level: %v %v", res, err)
		}
		return res
	}
	shared := func(a, b *mcp.CallToolResult) bool {
		sa, _ := a.StructuredContent.(json.RawMessage)
		sb, _ := b.StructuredContent.(json.RawMessage)
		return &a.Content[0] == &b.Content[0] && &sa[0] == &sb[0] &&
			&a.Meta.AdditionalFields[server.ProvenanceKey].(json.RawMessage)[0] == &b.Meta.AdditionalFields[server.ProvenanceKey].(json.RawMessage)[0]
	}
	r1, r2 := call(), call()
	if !shared(r1, r2) {
		t.Error("the same body again was encoded again")
	}
	if r1 == r2 || r1.Meta == r2.Meta {
		t.Error("two calls share one result or one _meta")
	}
	stamp := string(r2.Meta.AdditionalFields[server.ProvenanceKey].(json.RawMessage))
	if !strings.Contains(stamp, `"rebuttal":["stale soon","promcp://warrant/read_level#rebuttal"]`) ||
		!strings.Contains(stamp, `"warrant":{"ref":"promcp://warrant/read_level","digest":"sha256:`) {
		t.Errorf("stamp %s: want the warrant and the standing rebuttal by reference", stamp)
	}
	value = 43
	if r3 := call(); shared(r2, r3) || !strings.Contains(r3.Content[0].(mcp.TextContent).Text, "43") {
		t.Errorf("a new value was not encoded anew: %v", r3.Content)
	}
}
