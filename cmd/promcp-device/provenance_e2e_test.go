package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/internal/mcpread"
	"github.com/promcp/promcp-device/internal/testnet"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// stamped calls a tool through s (checking the body against the tool's
// output schema from tools/list, as s.call does) and returns the body, the
// provenance envelope from where placement puts it, and the _meta stamp.
func stamped(t *testing.T, s *session, placement, name string, args map[string]any) (body, env, stamp map[string]any) {
	t.Helper()
	res, err := s.c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		t.Fatalf("%s(%v): %v", name, args, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := s.schemas.Validate(name, b); err != nil {
		t.Fatalf("%s(%v) = %s: breaks its outputSchema: %v", name, args, b, err)
	}
	kind, _ := promcp.KindOf(name)
	if err := s.schemas.Validate(string(kind), b); err != nil {
		t.Fatalf("%s(%v) = %s: breaks the proMCP %s schema: %v", name, args, b, kind, err)
	}
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatal(err)
	}
	if res.Meta != nil {
		stamp, _ = res.Meta.AdditionalFields[server.ProvenanceKey].(map[string]any)
	}
	if stamp == nil || stamp["placement"] != placement || stamp["tool"] != name {
		t.Fatalf("%s: _meta stamp %v, want one for the tool with placement %s", name, stamp, placement)
	}
	env = stamp
	other := body
	if placement == "inline" {
		env, other = body, stamp
	}
	if ok, why := promcp.IsStamped(env); !ok {
		t.Fatalf("%s(%v): envelope in the %s placement is not complete: %s\n%v", name, args, placement, why, env)
	}
	for _, k := range []string{promcp.EnvelopeTool, promcp.EnvelopeToulmin, promcp.EnvelopeTags} {
		if _, dup := other[k]; dup {
			t.Fatalf("%s: %s is in both the body and the stamp", name, k)
		}
	}
	if env[promcp.EnvelopeTool] != name {
		t.Fatalf("%s: _tool = %v", name, env[promcp.EnvelopeTool])
	}
	// The warrant and the standing rebuttal come by reference: they
	// resolve by resources/read to the digest the result and tools/list
	// give; the checks below read the resolved envelope.
	if ref, err := promcp.ResolveEnvelope(env, s.readResource(t), s.standingDigests(t)); err != nil || !ref {
		t.Fatalf("%s(%v): the envelope's references (%t): %v", name, args, ref, err)
	}
	return body, env, stamp
}

// standingDigests are the digests of the tools' standing parts by URI, as
// tools/list gives them in each tool's _meta.
func (s *session) standingDigests(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, tool := range s.tools {
		var ref struct{ URI, Digest string }
		if tool.Meta != nil {
			b, _ := json.Marshal(tool.Meta.AdditionalFields[promcp.WarrantMetaKey])
			_ = json.Unmarshal(b, &ref)
		}
		if ref.URI != promcp.WarrantURI(tool.Name) || ref.Digest == "" {
			t.Fatalf("tools/list: %s gives no standing part in _meta: %v", tool.Name, tool.Meta)
		}
		out[ref.URI] = ref.Digest
	}
	return out
}

// readResource reads a resource's text over the session.
func (s *session) readResource(t *testing.T) func(uri string) ([]byte, error) {
	return func(uri string) ([]byte, error) { return mcpread.Text(t.Context(), s.c, uri) }
}

func argument(env map[string]any) (toulmin, grounds, warrant, qualifier, tags map[string]any, rebuttal []any) {
	toulmin = env[promcp.EnvelopeToulmin].(map[string]any)
	grounds, _ = toulmin["grounds"].(map[string]any)
	warrant, _ = toulmin["warrant"].(map[string]any)
	qualifier, _ = toulmin["qualifier"].(map[string]any)
	rebuttal, _ = toulmin["rebuttal"].([]any)
	return toulmin, grounds, warrant, qualifier, env[promcp.EnvelopeTags].(map[string]any), rebuttal
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	b := readFile(t, path)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestProvenanceEnvelope: through a real MCP client against the real
// binary, in both placements, every kind of result, errors included,
// carries the seed's envelope complete (exactly five argument keys, four
// tags), the grounds name what was read (the raw bytes of the device) or
// written and decided, the warrant names the served manifest's SHA-256 and
// the driver, and the qualifier agrees with the body. Inline, every body
// still validates against its tool's output schema from tools/list, which
// declares the envelope.
func TestProvenanceEnvelope(t *testing.T) {
	manifestDigest := fileDigest(t, greenhouse)
	policyDigest := fileDigest(t, "../../manifests/examples/greenhouse.policy.yml")
	hexRaw := regexp.MustCompile(`^([0-9a-f]{2})+$`)
	for _, placement := range []string{"meta", "inline"} {
		t.Run(placement, func(t *testing.T) {
			// Simulated time at a hundredth of real time: the zone 1
			// sensor's 2 s TTL lasts 200 s of real time, so the second read
			// below is served from the cache however slowly the machine
			// runs the two calls; nothing else here waits on the clock.
			s := stdioSession(t, protocols[0], "--manifest", greenhouse, "--provenance", placement, "--time-scale", "0.01")
			for _, tool := range s.tools {
				raw, _ := json.Marshal(tool.OutputSchema)
				if len(tool.RawOutputSchema) > 0 {
					raw = tool.RawOutputSchema
				}
				var schema map[string]any
				json.Unmarshal(raw, &schema)
				props, _ := schema["properties"].(map[string]any)
				_, declared := props[promcp.EnvelopeToulmin]
				if declared != (placement == "inline") {
					t.Errorf("%s: outputSchema declares _toulmin: %v, in placement %s", tool.Name, declared, placement)
				}
			}

			// A good Modbus read: the registers as they came off the wire.
			body, env, _ := stamped(t, s, placement, "read_site_power", map[string]any{"max_age_ms": 0})
			_, g, w, q, tags, reb := argument(env)
			if body["quality"] != "good" || q["quality"] != "good" {
				t.Errorf("read_site_power: body %v, qualifier %v", body, q)
			}
			if raw, _ := g["raw"].(string); len(raw) != 8 || !hexRaw.MatchString(raw) {
				t.Errorf("read_site_power grounds.raw = %v, want the 2 registers (4 bytes) in hex", g["raw"])
			}
			if g["device"] != "energy_meter" || g["bus"] != "plant_lan" || g["address"] != "unit 2" ||
				!strings.HasPrefix(g["register"].(string), "power (input 0") || !strings.Contains(g["conversion"].(string), "float32 word order CDAB") ||
				g["sampled_at"] != body["timestamp"] || g["cached"] != false {
				t.Errorf("read_site_power grounds = %v", g)
			}
			if w["manifest"] != manifestDigest || w["policy"] != policyDigest || w["driver"] != "modbus" || w["model"] != "modbus" {
				t.Errorf("read_site_power warrant = %v, want the manifest %s, the policy %s, driver modbus", w, manifestDigest, policyDigest)
			}
			if tags["origin"] != "device" || tags["bucket"] != "read_only" || tags["freshness"] != "live" {
				t.Errorf("read_site_power tags = %v", tags)
			}
			if len(reb) == 0 || !strings.HasPrefix(reb[0].(string), "stale after ") || !slices.ContainsFunc(reb, func(r any) bool {
				return strings.HasPrefix(r.(string), "health rule plausible: degraded outside 0..50000 W")
			}) {
				t.Errorf("read_site_power rebuttal = %v, want staleness and the plausible rule", reb)
			}

			// An I2C read served from the cache: the SHT3x's six bytes.
			stamped(t, s, placement, "read_temperature_zone1", map[string]any{})
			_, env, _ = stamped(t, s, placement, "read_temperature_zone1", map[string]any{})
			_, g, w, _, tags, _ = argument(env)
			if raw, _ := g["raw"].(string); len(raw) != 12 || w["driver"] != "i2c" || g["address"] != "0x44" && g["address"] != "0x45" {
				t.Errorf("read_temperature_zone1 grounds %v, warrant %v: want 6 raw bytes over i2c", g, w)
			}
			if tags["freshness"] != "cached" || g["cached"] != true {
				t.Errorf("second read_temperature_zone1 within its TTL: tags %v, grounds cached %v; want cached", tags, g["cached"])
			}

			// A read the server refuses (bad arguments): quality error.
			body, env, _ = stamped(t, s, placement, "read_site_power", map[string]any{"max_age_ms": -1})
			_, g, _, q, tags, _ = argument(env)
			if body["quality"] != "error" || q["quality"] != "error" || tags["origin"] != "server" || tags["freshness"] != "none" || g["sampled_at"] != nil {
				t.Errorf("read_site_power(max_age_ms -1): body %v, qualifier %v, tags %v, grounds %v", body, q, tags, g)
			}

			// A do_* that writes: the write, the readback, the decision.
			body, env, _ = stamped(t, s, placement, "do_set_fan_speed", map[string]any{"value": 20.5})
			_, g, w, q, tags, _ = argument(env)
			d, _ := g["decision"].(map[string]any)
			if body["status"] != "success" || q["quality"] != "success" || g["written"] != 20.5 || g["readback"] != 20.5 ||
				g["readback_quality"] != "good" || d["permission"] != "allowed" || d["reserved"] != true || w["driver"] != "modbus" {
				t.Errorf("do_set_fan_speed 20.5: body %v\ngrounds %v\nwarrant %v qualifier %v", body, g, w, q)
			}
			if tags["origin"] != "device" || tags["bucket"] != "real_dispatch" || tags["freshness"] != "live" {
				t.Errorf("do_set_fan_speed tags = %v", tags)
			}

			// A do_* the policy refuses: nothing written, the decision.
			body, env, _ = stamped(t, s, placement, "do_set_fan_speed", map[string]any{"value": 99})
			_, g, w, q, tags, _ = argument(env)
			d, _ = g["decision"].(map[string]any)
			if body["status"] != "failed" || q["quality"] != "failed" || g["written"] != nil || d["permission"] != "out_of_range" ||
				d["reserved"] != false || tags["origin"] != "policy" || w["driver"] != "policy" || g["requested"] != 99.0 {
				t.Errorf("do_set_fan_speed 99: body %v\ngrounds %v\ntags %v warrant %v", body, g, tags, w)
			}

			// A do_* with bad arguments: the server answers alone.
			body, env, _ = stamped(t, s, placement, "do_set_fan_speed", map[string]any{"value": "fast"})
			_, g, _, _, tags, _ = argument(env)
			if body["status"] != "failed" || tags["origin"] != "server" || tags["bucket"] != "real_dispatch" || g["written"] != nil {
				t.Errorf("do_set_fan_speed \"fast\": body %v, grounds %v, tags %v", body, g, tags)
			}

			// can_do: the grounds are the policy evaluation.
			body, env, _ = stamped(t, s, placement, "can_do", map[string]any{"intent": map[string]any{"action": "do_set_fan_speed", "value": 30}})
			_, g, w, q, tags, _ = argument(env)
			want := "infeasible"
			if body["feasible"] == true {
				want = "feasible"
			}
			if q["quality"] != want || w["driver"] != "policy" || tags["origin"] != "policy" || tags["bucket"] != "read_only" ||
				int(g["candidates"].(float64)) != len(body["candidates"].([]any)) || g["intent"].(map[string]any)["action"] != "do_set_fan_speed" {
				t.Errorf("can_do: body %v\ngrounds %v qualifier %v tags %v", body, g, q, tags)
			}

			// Every kind has the same envelope keys, and the same stamp keys.
			for _, name := range []string{"read_site_power", "do_set_fan_speed", "can_do"} {
				args := map[string]any{}
				if name == "do_set_fan_speed" {
					args["value"] = 20.5
				} else if name == "can_do" {
					args["intent"] = map[string]any{}
				}
				_, env, stamp := stamped(t, s, placement, name, args)
				toulmin, _, w, q, tags, _ := argument(env)
				if !slices.Equal(keysOf(toulmin), []string{"claim", "grounds", "qualifier", "rebuttal", "warrant"}) ||
					!slices.Equal(keysOf(tags), []string{"bucket", "check", "freshness", "origin"}) ||
					!slices.Equal(keysOf(w), []string{"contract", "driver", "manifest", "model", "output_schema", "policy"}) ||
					!slices.Equal(keysOf(q), []string{"quality", "reason"}) {
					t.Errorf("%s: envelope keys %v %v %v %v", name, keysOf(toulmin), keysOf(tags), keysOf(w), keysOf(q))
				}
				for _, k := range []string{"body", "checked", "contract", "kind", "output_schema", "placement", "server", "source", "tool"} {
					if _, ok := stamp[k]; !ok {
						t.Errorf("%s: stamp lacks %s", name, k)
					}
				}
			}
		})
	}
}

// TestProvenanceOnADeadDevice: a gateway whose Modbus devices cannot be
// reached answers read_* with quality error and do_* failed, each with its
// envelope complete: the grounds name the device, the qualifier the error.
func TestProvenanceOnADeadDevice(t *testing.T) {
	manifest := modbusGateway(t, testnet.FreeAddr(t)) // nothing listens there: every connection is refused
	for _, placement := range []string{"meta", "inline"} {
		t.Run(placement, func(t *testing.T) {
			s := commandSession(t, protocols[0], binary, []string{"serve", "--manifest", manifest, "--allow-no-policy", "--log-level", "error", "--provenance", placement})
			body, env, _ := stamped(t, s, placement, "read_site_power", map[string]any{})
			_, g, w, q, tags, _ := argument(env)
			if body["quality"] != "error" || q["quality"] != "error" || q["reason"] == "" || g["device"] != "energy_meter" ||
				g["raw"] != "" || g["sampled_at"] != nil || tags["origin"] != "device" || tags["freshness"] != "none" ||
				w["manifest"] != fileDigest(t, manifest) || w["policy"] != "" {
				t.Errorf("read_site_power on a dead meter: body %v\ngrounds %v\nqualifier %v tags %v warrant %v", body, g, q, tags, w)
			}
			body, env, _ = stamped(t, s, placement, "do_set_fan_speed", map[string]any{"value": 10})
			_, g, _, q, _, _ = argument(env)
			if body["status"] != "failed" || q["quality"] != "failed" || g["device"] != "fan_vfd" {
				t.Errorf("do_set_fan_speed on a dead drive: body %v, grounds %v, qualifier %v", body, g, q)
			}
		})
	}
}

// TestLintCallReadsInline: lint --call-reads finds the envelope complete
// (C006) and every answer valid against its declared output schema (C003)
// when the envelope is inline, as it does in _meta.
func TestLintCallReadsInline(t *testing.T) {
	t.Parallel()
	for _, placement := range []string{"meta", "inline"} {
		code, codes := lintJSON(t, "--call-reads", "--manifest", greenhouse, "--", binary, "serve", "--sim", "--manifest", greenhouse,
			"--log-level", "error", "--provenance", placement)
		for _, c := range codes {
			if strings.HasPrefix(c, "C") {
				t.Errorf("%s: lint --call-reads found %s (exit %d, all: %v)", placement, c, code, codes)
			}
		}
	}
}
