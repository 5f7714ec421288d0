package shared

import (
	"time"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
)

// Rule says how a claim is held fleet-wide.
type Rule struct {
	// Owner names the actuator's owner: the gateway it is wired to, or
	// the piece of shared equipment. Every gateway that claims the same
	// actuator gives the same Owner, so that all of them compare-and-set
	// the same key (cooldown.<Owner>.<action>).
	Owner string
	// Quorum is true for a requires_quorum action: its replicated write
	// must commit. Every shared claim needs the write to commit; Quorum
	// only changes the wording of the refusal.
	Quorum bool
	// RateLimit, when set, is enforced fleet-wide through FLEET_RATE
	// (the local evaluation still applies it to this gateway's history).
	RateLimit *manifests.RateLimit
	// Lease bounds how long another gateway's pending reservation holds
	// the actuator before it is taken as an actuation that happened (its
	// holder may have died); 0 is 30 s.
	Lease time.Duration
}

// Rules decides, per claim, whether it is shared and how.
type Rules func(c policy.Claim) (Rule, bool)

// RulesFromPolicy returns the rules of a gateway's policy file: an action
// is shared when its policy says shared: true or shared: NAME, or has a
// quorum (requires_quorum in a PhysMCP manifest); owner names the gateway
// the actuators belong to, and shared: NAME names instead the equipment
// several gateways drive (their actions of the same tool then share one
// record). A move to an action's safe value (safe, by do_*
// tool) is never shared: like every other check but role and value, the
// fleet does not hold back the safe direction, partitioned or not.
func RulesFromPolicy(owner string, pol *manifests.Policy, safe map[string]any) Rules {
	return func(c policy.Claim) (Rule, bool) {
		if pol == nil {
			return Rule{}, false
		}
		ap := pol.Actions[c.Action]
		if ap == nil || (!ap.Shared && ap.Quorum == nil) {
			return Rule{}, false
		}
		if sv, ok := safe[c.Action]; ok && (policy.Request{HasValue: true, Value: c.Value, SafeValue: sv}).IsSafe() {
			return Rule{}, false
		}
		o := owner
		if ap.Equipment != "" { // shared: NAME: one record for every gateway that drives it
			o = "equipment-" + ap.Equipment
		}
		return Rule{Owner: o, Quorum: ap.Quorum != nil, RateLimit: ap.RateLimit}, true
	}
}
