package manifests

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Emergency is a policy's emergency block (PhysMCP §6 emergency): who may
// use an emergency override, and how long one lasts at most.
//
// An override is a token that a person holding the gateway's approval key
// issues with `promcp-device override` for one do_* tool; it lasts at most
// TTL and may be used again until it lapses. The gateway honours it only
// from a caller whose role is one of Roles, and only with an audit log,
// which records every action taken under it (who issued it, its id).
//
// An override lifts who may act and the rules that pace or schedule an
// action: the action's roles (the caller holds a role of Roles instead;
// PhysMCP's admin is above the operator an action names), time windows,
// cooldown, rate limit and approval (and the person's confirmation a
// doubtful reading asks for). It never lifts the value's range (the
// manifest's constraints and the policy's range guard), an interlock,
// quorum, nor a refusal for a reading that cannot be read: those keep the
// hardware and the people near it safe, which is what an emergency needs
// most.
type Emergency struct {
	// Roles may use an override.
	Roles []string
	// TTL is how long an override lasts at most.
	TTL time.Duration
	// Pos is where the block is declared.
	Pos Position
}

// MaxOverrideTTL bounds an emergency override: an override that lasts
// longer is a policy that should be changed instead.
const MaxOverrideTTL = time.Hour

var emergencyKeys = []string{"roles", "ttl"}

// emergency decodes the emergency block at key k of our policy format:
// roles (required) and ttl (required, at most MaxOverrideTTL).
func (o obj) emergency(k string, pol *Policy) *Emergency {
	em, ok := o.sub(k, emergencyKeys)
	if !ok {
		return nil
	}
	out := &Emergency{Roles: em.roles("roles", pol), TTL: em.dur("ttl")}
	out.Pos = o.d.at(o.at(k))
	out.Pos.File = o.d.p.file
	em.require("roles", "the roles that may use an emergency override, such as [admin]")
	em.require("ttl", "how long an override lasts at most, such as 5m")
	if em.has("ttl") && (out.TTL <= 0 || out.TTL > MaxOverrideTTL) && !o.d.bad[em.at("ttl")] {
		em.add("ttl", ErrRange, "%s (want more than 0 and at most %s)", FormatDuration(out.TTL), FormatDuration(MaxOverrideTTL))
	}
	return out
}

// FormatDuration writes d as people write it: 1h, 30m, 1h30m, 30s, not
// 1h0m0s.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// NeverAllowed notes each action whose rules can never allow it on a
// fleet of peers gateways (1: a lone gateway, as lint sees a manifest
// without a fleet): a quorum larger than the fleet. lint prints them as
// warnings.
func (pol *Policy) NeverAllowed(peers int) []Note {
	if pol == nil {
		return nil
	}
	fleet := fmt.Sprintf("a fleet of %d gateways", peers)
	if peers <= 1 {
		fleet = "a lone gateway"
	}
	var out []Note
	for _, tool := range slices.Sorted(maps.Keys(pol.Actions)) {
		q := pol.Actions[tool].Quorum
		if q == nil || q.MinPeers <= max(peers, 1) {
			continue
		}
		out = append(out, Note{Pos: q.Pos, Field: "actions." + tool + ".quorum.min_peers", Msg: fmt.Sprintf(
			"%d gateways must be reachable, and %s has %d: %s is never allowed (partition_no_quorum), whatever the caller, even under an emergency override; lower min_peers or join a fleet that large",
			q.MinPeers, fleet, max(peers, 1), tool)})
	}
	return out
}
