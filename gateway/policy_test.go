package gateway_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	pi2c "periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/physic"

	"github.com/promcp/promcp-device/approval"
	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/sim"
	"github.com/promcp/promcp-device/simtest"
)

// deadBus is an I2C bus on which no device answers: every transaction is
// NACKed, as Linux reports it.
type deadBus struct{}

func (deadBus) String() string                  { return "dead" }
func (deadBus) Tx(uint16, []byte, []byte) error { return syscall.Errno(121) }
func (deadBus) SetSpeed(physic.Frequency) error { return nil }
func (deadBus) Close() error                    { return nil }

func newPolicyBench(t *testing.T, opts ...client.ClientOption) *bench {
	return newPolicyBenchWith(t, nil, opts...)
}

func newPolicyBenchWith(t *testing.T, signer *approval.Signer, opts ...client.ClientOption) *bench {
	t.Helper()
	var sopts []server.Option
	if signer != nil {
		sopts = append(sopts, server.WithApprovals(signer))
	}
	return newPolicyBenchFrom(t, "testdata/policy/bench.policy.yml", sopts, opts...)
}

// newPolicyBenchFrom is the policy test bench: the server in process on a
// manual clock at monday10, with the simulated devices of
// testdata/policy/bench.yml (its bus i2c2 dead), under the policy file
// policyFile, with more server options.
func newPolicyBenchFrom(t *testing.T, policyFile string, more []server.Option, opts ...client.ClientOption) *bench {
	t.Helper()
	m := manifesttest.Load(t, "testdata/policy/bench.yml")
	hw := func(w *sim.World) capabilities.HardwareFuncs {
		hw := simtest.Hardware(w)
		i2c := hw.I2C
		hw.I2C = func(ctx context.Context, b manifests.Bus) (pi2c.BusCloser, error) {
			if b.Name == "i2c2" {
				return deadBus{}, nil
			}
			return i2c(ctx, b)
		}
		return hw
	}
	return serveAt(t, m, monday10, gatewaytest.Options{Hardware: hw, Server: more,
		Gateway: gateway.GatewayOptions{Policy: manifesttest.LoadPolicy(t, policyFile, m)}}, opts...)
}

// canDo returns the permission can_do gives tool with value, and the
// entry it came in.
func (b *bench) canDo(tool string, value any) (promcp.Permission, map[string]any) {
	b.t.Helper()
	intent := map[string]any{"action": tool}
	if value != nil {
		intent["value"] = value
	}
	rep := b.body("can_do", map[string]any{"intent": intent})
	for _, list := range []string{"candidates", "blocked"} {
		for _, e := range rep[list].([]any) {
			m := e.(map[string]any)
			if m["capability"] == tool {
				return promcp.Permission(m["permission"].(string)), m
			}
		}
	}
	b.t.Fatalf("can_do(%s) did not mention it: %v", tool, rep)
	return "", nil
}

// do returns the permission a direct do_* call met: allowed when it
// succeeded, else the refusal's permission.
func (b *bench) do(tool string, value any) (promcp.Permission, map[string]any) {
	b.t.Helper()
	r := b.body(tool, map[string]any{"value": value})
	if r["status"] == "success" {
		return promcp.Allowed, r
	}
	p, _ := r["permission"].(string)
	return promcp.Permission(p), r
}

// expect asserts can_do and a direct do_* agree on want.
func (b *bench) expect(tool string, value any, want promcp.Permission) {
	b.t.Helper()
	if got, e := b.canDo(tool, value); got != want {
		b.t.Fatalf("can_do(%s=%v) permission %s (%v), want %s", tool, value, got, e["reason"], want)
	}
	if got, r := b.do(tool, value); got != want {
		b.t.Fatalf("%s(%v) without can_do: permission %s (%v), want %s", tool, value, got, r["reason"], want)
	}
}

// TestEveryPermission reaches each of the nine permission values through
// the real server, by can_do and by a direct do_*, with a driven clock.
func TestEveryPermission(t *testing.T) {
	b := newPolicyBench(t)

	t.Run("allowed", func(t *testing.T) { b.expect("do_set_light_level", 50.0, promcp.Allowed) })
	t.Run("out_of_range", func(t *testing.T) { b.expect("do_set_light_level", 150.0, promcp.OutOfRange) })
	t.Run("requires_human_approval", func(t *testing.T) { b.expect("do_set_light_level", 95.0, promcp.RequiresHumanApproval) })
	t.Run("permission_insufficient", func(t *testing.T) { b.expect("do_set_valve", true, promcp.PermissionInsufficient) })
	t.Run("source_unreachable", func(t *testing.T) { b.expect("do_set_backup_light", 10.0, promcp.SourceUnreachable) })
	t.Run("partition_no_quorum", func(t *testing.T) { b.expect("do_set_siren", true, promcp.PartitionNoQuorum) })

	t.Run("cooldown_active then expiring", func(t *testing.T) {
		if p, r := b.do("do_set_pump", true); p != promcp.Allowed {
			t.Fatalf("first pump start: %s %v", p, r["reason"])
		}
		b.clk.Advance(time.Minute)
		b.expect("do_set_pump", false, promcp.CooldownActive)
		_, e := b.canDo("do_set_pump", false)
		until, _ := time.Parse(time.RFC3339Nano, e["valid_until"].(string))
		if want := monday10.Add(5 * time.Minute); !until.Equal(want) {
			t.Errorf("cooldown block valid_until %s, want the cooldown's end %s", until, want)
		}
		b.clk.Advance(4 * time.Minute)
		b.expect("do_set_pump", false, promcp.Allowed)
	})

	t.Run("policy_denied by interlock, fail closed", func(t *testing.T) {
		b.clk.Advance(10 * time.Minute)
		if err := b.w.Drive("GPIO6", false); err != nil { // door opens
			t.Fatal(err)
		}
		b.expect("do_set_pump", true, promcp.PolicyDenied)
		b.clk.Advance(10 * time.Second) // doors move slowly (the reading's max_rate)
		if err := b.w.Drive("GPIO6", true); err != nil {
			t.Fatal(err)
		}
		b.clk.Advance(10 * time.Second)
		b.expect("do_set_pump", true, promcp.Allowed)
	})

	t.Run("policy_denied by an interlock whose reading goes degraded", func(t *testing.T) {
		b.clk.Advance(10 * time.Minute)
		// The door switch chatters: its reading is degraded, and an
		// interlock on a reading that is not good fails closed.
		if err := b.w.Inject("door_switch", manifests.Fault{Kind: manifests.FaultNoise}); err != nil {
			t.Fatal(err)
		}
		b.clk.Advance(2 * time.Second)
		b.body("read_door_closed", map[string]any{})
		b.clk.Advance(2 * time.Second)
		if r := b.body("read_door_closed", map[string]any{}); r["quality"] != "degraded" {
			t.Fatalf("chattering door switch: read_door_closed = %v, want degraded", r)
		}
		b.expect("do_set_pump", false, promcp.PolicyDenied)
		_, e := b.canDo("do_set_pump", false)
		if reason, _ := e["reason"].(string); !strings.Contains(reason, "read_door_closed is degraded") {
			t.Errorf("can_do reason %q, want it to name the degraded reading", reason)
		}
		b.w.Clear("door_switch")
		b.clk.Advance(2 * time.Second)
		b.body("read_door_closed", map[string]any{})
		b.clk.Advance(2 * time.Second)
		b.expect("do_set_pump", false, promcp.Allowed)
	})

	t.Run("rate_limited then resetting", func(t *testing.T) {
		b.expect("do_set_fan", true, promcp.Allowed)
		b.clk.Advance(time.Minute)
		b.expect("do_set_fan", false, promcp.Allowed)
		b.clk.Advance(time.Minute)
		b.expect("do_set_fan", true, promcp.RateLimited)
		b.clk.Advance(59 * time.Minute) // the first of the two ages out
		b.expect("do_set_fan", true, promcp.Allowed)
	})

	t.Run("policy_denied by window, then the window opening", func(t *testing.T) {
		b.clk.Advance(monday10.Add(11 * time.Hour).Sub(b.clk.Now())) // Monday 21:00
		b.expect("do_set_fan", false, promcp.PolicyDenied)
		_, e := b.canDo("do_set_fan", false)
		until, _ := time.Parse(time.RFC3339Nano, e["valid_until"].(string))
		if want := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC); !until.Equal(want) {
			t.Errorf("window block valid_until %s, want Tuesday 06:00 %s", until, want)
		}
		b.clk.Advance(until.Sub(b.clk.Now()))
		b.expect("do_set_fan", false, promcp.Allowed)
	})
}

// confirmer answers every elicitation with action and approve=yes.
type confirmer struct {
	action mcp.ElicitationResponseAction
	yes    bool
	asked  []string
}

func (c *confirmer) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	c.asked = append(c.asked, req.Params.Message)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: c.action, Content: map[string]any{"approve": c.yes}}}, nil
}

// Where the policy opts in (approval via: elicitation), a human's answer
// through the caller's client approves the action, on both protocol
// generations.
func TestApprovalByElicitation(t *testing.T) {
	tests := []struct {
		name       string
		answer     confirmer
		wantStatus string
		wantLevel  float64
	}{
		{"accept", confirmer{action: mcp.ElicitationResponseActionAccept, yes: true}, "success", 95},
		{"accept without yes", confirmer{action: mcp.ElicitationResponseActionAccept, yes: false}, "failed", 40},
		{"decline", confirmer{action: mcp.ElicitationResponseActionDecline}, "failed", 40},
		{"cancel", confirmer{action: mcp.ElicitationResponseActionCancel}, "failed", 40},
	}
	for _, tc := range tests {
		for _, proto := range protocols {
			t.Run(tc.name+"/"+proto, func(t *testing.T) {
				h := tc.answer
				rec := &audit.Recorder{}
				b := newPolicyBenchFrom(t, "testdata/policy/bench-elicit.policy.yml", []server.Option{server.WithAuditor(rec)},
					client.WithElicitationHandler(&h), client.WithProtocolVersion(proto))
				r := b.body("do_set_light_level", map[string]any{"value": 95.0, "idempotency_key": "k-" + tc.name})
				if r["status"] != tc.wantStatus {
					t.Fatalf("do_set_light_level(95) = %v, want status %s", r, tc.wantStatus)
				}
				if len(h.asked) != 1 {
					t.Fatalf("the human was asked %d times, want once", len(h.asked))
				}
				if tc.wantStatus == "failed" && r["permission"] != "requires_human_approval" {
					t.Errorf("refused approval: permission %v, want requires_human_approval", r["permission"])
				}
				if got := b.body("read_light_level", map[string]any{})["value"]; got != tc.wantLevel {
					t.Fatalf("light level after %s = %v, want %v", tc.name, got, tc.wantLevel)
				}
				var approvals []*audit.Approval
				for _, r := range rec.Records() {
					if r.Event == audit.EventResult {
						approvals = append(approvals, r.Approval)
					}
				}
				switch {
				case tc.wantStatus == "success" && (len(approvals) != 1 || approvals[0] == nil || approvals[0].Method != approval.ViaElicitation || !approvals[0].At.Equal(monday10)):
					t.Errorf("result records' approvals = %+v, want one by elicitation at %s", approvals, monday10)
				case tc.wantStatus != "success" && len(approvals) != 0:
					t.Errorf("a refused approval left result records %+v", approvals)
				}
			})
		}
	}
}

// protocols are the MCP protocol generations the server speaks: elicitation
// inside the call (multi round-trip) and as a server-to-client request.
var protocols = []string{mcp.LATEST_PROTOCOL_VERSION, "2025-11-25"}

// By default (approval above a threshold, no via), a client whose
// elicitation handler always says yes gets nothing above the threshold
// through, on either protocol generation: it is not even asked, and the
// refusal says how to get an out-of-band approval. The approve token then
// does it, and the audit records say who approved, how and when.
func TestAlwaysAcceptingClientCannotApprove(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			signer, _ := approval.NewSigner([]byte("a key shared with the operator"))
			rec := &audit.Recorder{}
			h := confirmer{action: mcp.ElicitationResponseActionAccept, yes: true}
			b := newPolicyBenchFrom(t, "testdata/policy/bench.policy.yml",
				[]server.Option{server.WithApprovals(signer), server.WithAuditor(rec)},
				client.WithElicitationHandler(&h), client.WithProtocolVersion(proto))
			for i := range 3 { // a retry does not wear it down
				r := b.body("do_set_light_level", map[string]any{"value": 95.0, "idempotency_key": "k1"})
				if r["status"] != "failed" || r["permission"] != "requires_human_approval" {
					t.Fatalf("call %d: do_set_light_level(95) with an always-yes client = %v, want failed requires_human_approval", i, r)
				}
				if reason, _ := r["reason"].(string); !strings.Contains(reason, "promcp-device approve") || !strings.Contains(reason, "does not approve") {
					t.Errorf("reason %q, want it to say an answer through the client does not approve, and to name promcp-device approve", reason)
				}
			}
			if len(h.asked) != 0 {
				t.Errorf("the client was asked %d times, want never (its answer cannot approve this action)", len(h.asked))
			}
			if got := b.body("read_light_level", map[string]any{})["value"]; got != 40.0 {
				t.Fatalf("light level = %v, want 40 (untouched)", got)
			}
			if p, _ := b.canDo("do_set_light_level", 95.0); p != promcp.RequiresHumanApproval {
				t.Errorf("can_do(95) = %s, want requires_human_approval", p)
			}
			issued := monday10.Add(-time.Minute)
			tok := signer.Issue(approval.Grant{Tool: "do_set_light_level", Value: approval.Canonical(95), Key: "k1",
				Expires: monday10.Add(10 * time.Minute), By: "maria", Issued: issued})
			r := b.body("do_set_light_level", map[string]any{"value": 95.0, "idempotency_key": "k1", "approval": tok})
			if r["status"] != "success" {
				t.Fatalf("with an approve token: %v, want success", r)
			}
			var approved []audit.Record
			for _, r := range rec.Records() {
				if r.Approval != nil {
					approved = append(approved, r)
				}
			}
			if len(approved) != 2 || approved[0].Event != audit.EventAttempt || approved[1].Event != audit.EventResult {
				t.Fatalf("approved records = %+v, want the attempt and the result", approved)
			}
			if a := approved[1].Approval; a.By != "maria" || a.Method != approval.ViaOutOfBand || !a.At.Equal(issued) || a.ID == "" {
				t.Errorf("result's approval = %+v, want by maria, out_of_band, at %s, with the token id", a, issued)
			}
		})
	}
}

func TestApprovalOutOfBand(t *testing.T) {
	signer, _ := approval.NewSigner([]byte("a key shared with the operator"))
	b := newPolicyBenchWith(t, signer) // this client cannot elicit
	refused := b.body("do_set_light_level", map[string]any{"value": 95.0, "idempotency_key": "k1"})
	if refused["status"] != "failed" || refused["permission"] != "requires_human_approval" {
		t.Fatalf("without approval: %v, want failed requires_human_approval", refused)
	}
	tok := signer.Issue(approval.Grant{Tool: "do_set_light_level", Value: approval.Canonical(95), Key: "k1", Expires: monday10.Add(10 * time.Minute)})
	tests := []struct {
		name  string
		args  map[string]any
		want  string
		field string
	}{
		{"other value", map[string]any{"value": 96.0, "idempotency_key": "k1", "approval": tok}, "failed", "approval"},
		{"other key", map[string]any{"value": 95.0, "idempotency_key": "k2", "approval": tok}, "failed", "approval"},
		{"forged", map[string]any{"value": 95.0, "idempotency_key": "k1", "approval": tok + "x"}, "failed", "approval"},
		{"valid", map[string]any{"value": 95.0, "idempotency_key": "k1", "approval": tok}, "success", ""},
		{"retry replays", map[string]any{"value": 95.0, "idempotency_key": "k1", "approval": tok}, "success", ""},
	}
	for _, tc := range tests {
		r := b.body("do_set_light_level", tc.args)
		if r["status"] != tc.want {
			t.Fatalf("%s: %v, want status %s", tc.name, r, tc.want)
		}
		if tc.field != "" && r["error"].(map[string]any)["field"] != tc.field {
			t.Fatalf("%s: error %v, want it to name the %s argument", tc.name, r["error"], tc.field)
		}
	}
	if got := b.body("read_light_level", map[string]any{})["value"]; got != 95.0 {
		t.Fatalf("light level = %v, want 95 after the approved action", got)
	}
	b.clk.Advance(time.Minute)
	b.body("do_set_light_level", map[string]any{"value": 50.0})
	// The token is spent: a new call under another key cannot reuse it, and
	// the same key with other arguments is an idempotency conflict.
	again := b.body("do_set_light_level", map[string]any{"value": 95.0, "idempotency_key": "k3", "approval": tok})
	if again["status"] != "failed" {
		t.Fatalf("reusing a spent approval: %v, want refused", again)
	}
}
