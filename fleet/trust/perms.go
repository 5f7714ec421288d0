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

// jsAPI is subject s in the hub's JetStream API, in both spellings.
func jsAPI(s string) []string {
	return []string{"$JS.API." + s, "$JS." + HubDomain + ".API." + s}
}

// GatewayPermissions are gateway n's permissions, per FLEET-TRUST.md:
// it publishes only calls and can_do questions it enters itself, its own
// audit and shared-state requests, its own registry and heartbeat keys and
// read-only JetStream requests on the registry and alive buckets; it
// receives only its own calls and can_do questions and its own inbox
// (nats.CustomInboxPrefix("_INBOX.<n>")). No stream or bucket management.
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
			"$SRV.PING", "$SRV.PING.>", "$SRV.INFO", "$SRV.INFO.>", "$SRV.STATS", "$SRV.STATS.>",
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
		p.Publish = append(p.Publish, jsAPI("CONSUMER.CREATE.KV_"+b+".>")...)
		p.Publish = append(p.Publish, jsAPI("DIRECT.GET.KV_"+b+".>")...)
		p.Publish = append(p.Publish, jsAPI("STREAM.MSG.GET.KV_"+b)...)
	}
	p.Publish = append(p.Publish, jsAPI("INFO")...)
	return p
}

// TransitionalGatewayPermissions are what the protocol as it stands before
// the branch fleetproto merges still needs from a gateway, on top of
// GatewayPermissions. TRANSITIONAL: delete this function and its one
// caller (natsembed.permissions) once fleetproto's subjects
// (promcp.call.<gw>.<entry>, promcp.cando.<gw>.<entry>,
// promcp.shared.<gw>.<op>) are merged; until then a gateway may still
// write the shared buckets and create/update the hub's streams, i.e. the
// attacks of issue 22 §2, §3 stay open.
func TransitionalGatewayPermissions(n string) Permissions {
	p := Permissions{
		Publish: []string{
			"promcp.*.call", "promcp.cando", // old routed calls and can_do fan-out
			// Replies to any inbox: the protocol's requests (routed calls,
			// can_do, micro PING/INFO) still reply to the requester's plain
			// inbox, which allow_responses does not carry over a leaf link.
			"_INBOX.>",
			// The audit source without a deliver prefix delivers on $JS.S.<random>.
			"$JS.S.>",
			"$KV.fleet_lease.>", "$KV.fleet_idem.>", "rate.>", "$JS." + HubDomain + ".API.$KV.fleet_lease.>",
			"$JS." + HubDomain + ".API.$KV.fleet_idem.>",
		},
		Subscribe: []string{"promcp." + n + ".call", "promcp.cando"},
	}
	for _, b := range []string{"KV_fleet_lease", "KV_fleet_idem", "FLEET_RATE", "FLEET_AUDIT"} {
		for _, op := range []string{"STREAM.INFO.", "STREAM.CREATE.", "STREAM.UPDATE.", "STREAM.MSG.GET.", "DIRECT.GET."} {
			p.Publish = append(p.Publish, jsAPI(op+b)...)
			if op == "DIRECT.GET." {
				p.Publish = append(p.Publish, jsAPI(op+b+".>")...)
			}
		}
		p.Publish = append(p.Publish, jsAPI("CONSUMER.CREATE."+b+".>")...)
	}
	for _, b := range readBuckets {
		p.Publish = append(p.Publish, jsAPI("STREAM.CREATE.KV_"+b)...)
	}
	return p
}

// Merge is p with q's subjects added.
func (p Permissions) Merge(q Permissions) Permissions {
	return Permissions{Publish: append(append([]string(nil), p.Publish...), q.Publish...),
		Subscribe: append(append([]string(nil), p.Subscribe...), q.Subscribe...), Responses: p.Responses || q.Responses}
}
