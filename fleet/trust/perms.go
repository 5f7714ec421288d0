package trust

// Permissions are what NATS lets a node publish and subscribe to on the
// hub (checked by the server on every message, over client and leaf
// links alike). Responses lets the node answer, once each, the requests
// it received (NATS's allow_responses), without any publish right on the
// requesters' inboxes.
type Permissions struct {
	Publish, Subscribe []string
	Responses          bool
}

// HubDomain is the hub's JetStream domain; a gateway's JetStream API
// requests to the hub carry it ($JS.hub.API.…) when they cross a leaf
// link, and not when a thin-edge sends them to a hub directly.
const HubDomain = "hub"

// The hub's buckets a gateway reads (and writes its own key in).
var readBuckets = []string{"fleet_registry", "fleet_alive"}

// The hubs' streams a gateway reads and never writes.
var sharedStreams = []string{"KV_fleet_lease", "KV_fleet_idem", "FLEET_RATE", "FLEET_AUDIT"}

// jsAPI is subject s in the hub's JetStream API, in both spellings.
func jsAPI(s string) []string {
	return []string{"$JS.API." + s, "$JS." + HubDomain + ".API." + s}
}

// GatewayPermissions are gateway n's permissions, per FLEET-TRUST.md:
// it publishes only calls and can_do questions it enters itself, its own
// audit and shared-state requests, replies to requests addressed to it
// (_INBOX.*.<n>.>), its own registry and heartbeat keys and read-only
// JetStream requests on the hubs' buckets and streams (no consumer: a
// push consumer's deliver subject is not checked against its creator's
// permissions); it receives only
// its own calls and can_do questions and its own inbox
// (nats.CustomInboxPrefix("_INBOX.<n>")). No stream or bucket management,
// no write to the shared records (fleet_lease, fleet_idem, FLEET_RATE:
// only the hubs write them) and no $SRV gathering.
func GatewayPermissions(n string) Permissions {
	p := Permissions{Responses: true,
		Publish: []string{
			"promcp.call.*." + n, "promcp.cando.*." + n, "promcp.audit." + n, "promcp.shared." + n + ".>",
			// Replies addressed to n: _INBOX.<requester>.<n>.… (over a
			// leaf link allow_responses carries no reply; see
			// FLEET-TRUST.md, Change of 2026-12-01).
			"_INBOX.*." + n + ".>",
			// The hub sources AUDIT_<n> from n's own JetStream domain: n's
			// API answers the hub's consumer creation on $JSC.R.<random>,
			// and the source consumer delivers n's records on the deliver
			// prefix the hub gives it, promcp.audit.<n>.src.
			"promcp.audit." + n + ".>", "$JSC.R.>",
		},
		Subscribe: []string{
			"promcp.call." + n + ".*", "promcp.cando." + n + ".*", "_INBOX." + n + ".>",
			"$SRV.PING", "$SRV.PING.promcp-gateway", "$SRV.PING.promcp-gateway.*",
			"$SRV.INFO", "$SRV.INFO.promcp-gateway", "$SRV.INFO.promcp-gateway.*",
			"$SRV.STATS", "$SRV.STATS.promcp-gateway", "$SRV.STATS.promcp-gateway.*",
			// The hub's JetStream sources the edge's AUDIT_<n> (domain
			// <n>): its requests to the edge's API, answered by Responses.
			"$JS." + n + ".API.>", "$JS.FC.AUDIT_" + n + ".>",
		},
	}
	for _, b := range readBuckets {
		key := "$KV." + b + ".gw." + n
		p.Publish = append(p.Publish, key, "$JS."+HubDomain+".API."+key)
		p.Publish = append(p.Publish, jsAPI("STREAM.INFO.KV_"+b)...)
		// Direct gets: a key's last value, and every key's at once
		// (multi_last, paged with next_by_subj batches past the server's
		// 1,024 keys; how a gateway's view reads them, View.pollOnce).
		p.Publish = append(p.Publish, jsAPI("DIRECT.GET.KV_"+b)...)
		p.Publish = append(p.Publish, jsAPI("DIRECT.GET.KV_"+b+".>")...)
		p.Publish = append(p.Publish, jsAPI("STREAM.MSG.GET.KV_"+b)...)
	}
	// Read-only: the shared records (the hubs write them, through the
	// promcp.shared.<n>.* service) and the fleet audit.
	for _, st := range sharedStreams {
		p.Publish = append(p.Publish, jsAPI("STREAM.INFO."+st)...)
		p.Publish = append(p.Publish, jsAPI("STREAM.MSG.GET."+st)...)
		p.Publish = append(p.Publish, jsAPI("DIRECT.GET."+st)...)
		p.Publish = append(p.Publish, jsAPI("DIRECT.GET."+st+".>")...)
	}
	p.Publish = append(p.Publish, jsAPI("INFO")...)
	return p
}
