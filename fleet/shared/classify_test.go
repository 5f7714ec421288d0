package shared

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/promcp"
)

// TestClassify: the errors of docs/fleet.md, "Hub errors and what they mean", as nats.go returns them
// (wrapped as our calls wrap them), sort into what a claim does next.
func TestClassify(t *testing.T) {
	api := func(code jetstream.ErrorCode) error {
		return fmt.Errorf("writing cooldown.gw1.do_x: %w", &jetstream.APIError{ErrorCode: code, Code: 503, Description: "x"})
	}
	for _, tc := range []struct {
		name string
		err  error
		want Class
	}{
		{"10071 lost CAS", api(jetstream.JSErrCodeStreamWrongLastSequence), ClassConflict},
		{"10164 CAS on a replicated stream, or a lame-duck leader", api(jetstream.JSErrCodeStreamWrongLastSequenceConstant), ClassConflict},
		{"Create on an existing key", fmt.Errorf("x: %w", jetstream.ErrKeyExists), ClassConflict},
		{"10077 rate slot taken", api(10077), ClassRateFull},
		{"10076 hub domain not reachable", api(jetstream.JSErrCodeJetStreamNotEnabled), ClassUnreachable},
		{"no responders (cut off)", fmt.Errorf("x: %w", nats.ErrNoResponders), ClassUnreachable},
		{"10008 meta group leaderless", api(10008), ClassNoQuorum},
		{"no stream leader", fmt.Errorf("x: %w", jetstream.ErrNoStreamResponse), ClassNoQuorum},
		{"deadline across a leaf", fmt.Errorf("x: %w", context.DeadlineExceeded), ClassNoQuorum},
		{"unknown", errors.New("disk on fire"), ClassOther},
		{"nil", nil, ClassOther},
	} {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("%s: Classify(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestReachReason: partition_no_quorum says what is reachable and what
// is required, and whether the gateway is cut off.
func TestReachReason(t *testing.T) {
	for _, tc := range []struct {
		r    Reach
		want string
	}{
		{Reach{Reachable: 1, Required: 2, Replicas: 3}, "do_x requires quorum: it needs a replicated write on the fleet hub, and the hub answers but cannot commit the replicated write: replicas reachable: 1, required: 2 (of 3)"},
		{Reach{Reachable: 0, Required: 2, Replicas: 3, Cut: true}, "do_x requires quorum: it needs a replicated write on the fleet hub, and this gateway is cut off from the hub: replicas reachable: 0, required: 2 (of 3)"},
		{Reach{Reachable: 2, Required: 2, Replicas: 3}, "do_x requires quorum: it needs a replicated write on the fleet hub, and the hub answers but cannot commit the replicated write: replicas reachable: fewer than 2, required: 2 (of 3)"},
		{Reach{Reachable: -1, Required: 3, Replicas: 5}, "do_x requires quorum: it needs a replicated write on the fleet hub, and the hub answers but cannot commit the replicated write: replicas reachable: fewer than 3, required: 3 (of 5)"},
	} {
		if got := tc.r.Reason("do_x requires quorum: it"); got != tc.want {
			t.Errorf("Reason = %q\nwant %q", got, tc.want)
		}
	}
}

// TestIdemKey: keys KV allows are kept, the others hashed, and the two
// never collide.
func TestIdemKey(t *testing.T) {
	if got := idemKey("2b1c-77_a=9"); got != "idem.2b1c-77_a=9" {
		t.Errorf("idemKey(plain) = %q", got)
	}
	odd := idemKey("a.b c/ü")
	if len(odd) != len("idem.h.")+64 || odd[:7] != "idem.h." {
		t.Errorf("idemKey(odd) = %q, want idem.h.<sha256>", odd)
	}
	if idemKey("h") == idemKey("h.") {
		t.Error("idemKey collides")
	}
}

// TestBadOwner: a rule whose owner cannot name a fleet key refuses the
// claim (fail closed) without touching the hub or the local reserver.
func TestBadOwner(t *testing.T) {
	s := &State{cfg: Config{Gateway: "gw1"}}
	local := policy.NewLocalReserver(policy.NewMemoryState())
	r := s.Reserver(local, func(policy.Claim) (Rule, bool) { return Rule{Owner: "gw 1.>"}, true })
	c := policy.Claim{Action: "do_x", Unit: policy.Unit{"do_x"}, Now: time.Now()}
	res, d, err := r.Reserve(context.Background(), c, func(context.Context, policy.View) policy.Decision {
		t.Fatal("decided a claim whose fleet key is invalid")
		return policy.Decision{}
	})
	if err != nil || res != nil || d.Permission != promcp.PolicyDenied || !strings.Contains(d.Reason, `"gw 1.>"`) {
		t.Fatalf("bad owner: %v %s (%s) %v", res, d.Permission, d.Reason, err)
	}
}
