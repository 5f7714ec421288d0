// Package shared keeps a fleet's shared policy state on the hub's NATS
// JetStream (docs/fleet.md): cooldowns and leases on shared equipment by
// compare-and-set in the replicated KV bucket fleet_lease, fleet-wide rate
// limits in the stream FLEET_RATE, fleet-wide idempotency claims in the KV
// bucket fleet_idem, and audit records forwarded from each gateway's
// stream AUDIT_<gateway> into FLEET_AUDIT.
//
// [Open] binds the buckets and streams (creating them when absent).
// [State.Reserver] wraps a gateway's local policy.Reserver: claims its
// [Rules] mark shared (policy shared: true, or a quorum) are decided on
// the fleet's state and reserved by compare-and-set, so that of several
// gateways racing for the same actuator exactly one wins; the others
// decide again on the winner's record (cooldown_active). When the write
// cannot commit (two of three hub replicas lost, or this gateway cut off
// from the hub) the claim is refused partition_no_quorum with a reason
// that says how many replicas are reachable and how many are required,
// and nothing is reserved. Every other claim goes to the local reserver,
// whatever the hub's state.
//
// [State.Store] wraps a gateway's idempotency.Store with a fleet-wide
// claim of each key in fleet_idem. [State.Forwarder] copies the gateway's
// audit records (audit.Options.OnWrite) to its stream AUDIT_<gateway>,
// sourced into FLEET_AUDIT; [TailFleet] reads them. [Classify] sorts hub
// errors as docs/fleet.md ("Hub errors and what they mean") does. Package sharedtest starts a loopback fleet
// (three hub nodes, leaf gateways with cuttable links) for tests.
//
// Gateways never write fleet_lease, fleet_idem or FLEET_RATE themselves:
// they read them, and ask the hubs to write on promcp.shared.<gw>.<op>,
// a subject NATS lets only gateway <gw> publish on. [Serve] runs that
// service on a hub member (queue group "hub"): it checks that <gw> may
// touch the record (its own, or equipment its registry entry lists as
// shared; only its own pending reservations and claims), takes every
// time from the hub's clock (a request names none) and does the
// compare-and-set.
//
// Ages are measured on the hub's clock (the server's time of each write,
// mapped onto the gateway's clock by a skew measured on writes), never by
// comparing two gateways' clocks.
package shared
