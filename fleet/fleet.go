// Package fleet joins gateways into a fleet on NATS, as PhysMCP's mesh
// describes it: every gateway registers (a micro service "promcp-gateway"
// and its manifest in the replicated KV bucket fleet_registry), answers a
// fleet's can_do on promcp.cando.<gateway>.<entry> and routed tool calls
// on promcp.call.<gateway>.<entry>, where <entry> is the node that sent
// it, bound by NATS's permissions (node n may publish only
// promcp.*.*.<n>): the gateway takes who asks, and through which node,
// from the subject, never from the message. Any node coordinates a fleet
// can_do (one request per gateway that can match, within a 500 ms budget,
// PhysMCP's floating coordinator) and may
// serve the fleet MCP endpoint: can_do over every gateway and each
// gateway's tools, namespaced, in groups within the density limits.
//
// The package needs a *nats.Conn only; where it comes from (an embedded
// leaf server, a hub member, or a plain client of a hub) is the caller's
// choice (see package natsembed).
package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Names on the NATS side.
const (
	// ServiceName is the micro service every gateway registers.
	ServiceName = "promcp-gateway"
	// ServiceVersion is the micro service's version (SemVer).
	ServiceVersion = "0.1.0"
	// RegistryBucket holds each gateway's Info under "gw.<id>".
	RegistryBucket = "fleet_registry"
	// AliveBucket holds each live gateway's heartbeat under "gw.<id>" (its
	// manifest hash); entries expire RegistryTTL after their last write.
	AliveBucket = "fleet_alive"
	// HubDomain is the hub's JetStream domain.
	HubDomain = "hub"
	// PromcpVersion and PhysMCPVersion are the protocol versions a
	// gateway reports.
	PromcpVersion  = "0.2"
	PhysMCPVersion = "0.1"
)

// Liveness. A gateway rewrites its key in the alive bucket every
// heartbeat (a few bytes; its manifest stays in the registry, written only
// when it changes); the hub drops a key RegistryTTL after its last write
// (the bucket's max age, judged by the hub's own clock, so gateway clocks
// do not matter) and leaves a delete marker every watcher sees. The fleet
// is the registered gateways whose heartbeat is alive: one that stops
// without leaving (crash, power loss, a link that black-holes) leaves the
// fleet's tool lists within RegistryTTL plus the watch's delivery, and
// until then its calls fail as source_unreachable. A clean Close deletes
// both keys at once.
const (
	// HeartbeatInterval is how often a gateway rewrites its registry entry
	// (MemberConfig.Upkeep's default).
	HeartbeatInterval = 2 * time.Second
	// RegistryTTL is how long a heartbeat lives:
	// five missed heartbeats, PhysMCP's "dead" (three make it suspected).
	RegistryTTL = 5 * HeartbeatInterval
)

// Partition states, as PhysMCP's metadata.partition_state reports them.
const (
	// StateHealthy: the hub and every registered gateway answer.
	StateHealthy = "healthy"
	// StateSuspected: the hub answers but some registered gateways do
	// not (PhysMCP's suspected_partition).
	StateSuspected = "suspected_partition"
	// StateIsolated: this node cannot reach the hub; it serves its own
	// tools only, and actions that need quorum are refused.
	StateIsolated = "isolated"
)

// CallSubject is the subject of routed tool calls to gateway gw sent by
// node entry: only entry may publish on it, only gw subscribes
// (FLEET-TRUST: node n publishes promcp.call.*.<n>, gateway n subscribes
// promcp.call.<n>.*).
func CallSubject(gw, entry string) string { return "promcp.call." + gw + "." + entry }

// CanDoSubject is the subject of a fleet can_do asked of gateway gw by
// coordinator entry (node n publishes promcp.cando.*.<n>, gateway n
// subscribes promcp.cando.<n>.*).
func CanDoSubject(gw, entry string) string { return "promcp.cando." + gw + "." + entry }

// InboxPrefix is node's reply inbox prefix: every node connects with
// nats.CustomInboxPrefix(InboxPrefix(node)), the only inbox it may
// subscribe to.
func InboxPrefix(node string) string { return "_INBOX." + node }

// ReplyPrefix is where node asks responder to answer:
// _INBOX.<node>.<responder>. Gateway g may publish under _INBOX only on
// _INBOX.*.<g>.> (FLEET-TRUST, Change of 2026-12-01: allow-responses
// does not carry replies across leaf links), so an answer arriving under
// this prefix is from responder (or a hub), bound by NATS.
func ReplyPrefix(node, responder string) string { return InboxPrefix(node) + "." + responder }

// entryOf is the entry node of a routed call or can_do subject (its last
// token), "" when the subject is not one.
func entryOf(subject, gw string) string {
	for _, p := range []string{"promcp.call." + gw + ".", "promcp.cando." + gw + "."} {
		if e, ok := strings.CutPrefix(subject, p); ok && nodeRE.MatchString(e) {
			return e
		}
	}
	return ""
}

// nodeRE is a node id: letters, digits, '-' and '_' (no dots).
var nodeRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func registryKey(id string) string { return "gw." + id }

// Info is what a gateway registers: who it is, where it stands, and the
// tools it serves (its manifest as the fleet sees it).
type Info struct {
	GatewayID      string   `json:"gateway_id"`
	Zone           string   `json:"zone,omitempty"`
	Tags           []string `json:"tags,omitempty"`
	Profile        string   `json:"profile"`
	ManifestHash   string   `json:"manifest_hash"`
	PromcpVersion  string   `json:"promcp_version"`
	PhysMCPVersion string   `json:"physmcp_version"`
	Locations      []string `json:"locations,omitempty"`
	Vocabulary     []string `json:"vocabulary,omitempty"`
	// Shared are the owners of the shared equipment this gateway's rules
	// claim fleet-wide (policy shared: NAME, as equipment-NAME): the hubs
	// let it write fleet records of these owners and its own only.
	Shared     []string   `json:"shared,omitempty"`
	Tools      []mcp.Tool `json:"tools"`
	Registered time.Time  `json:"registered"`
}

// Hash is the manifest hash of a tool list: it changes when any tool's
// name, description or schema does.
func Hash(tools []mcp.Tool) string {
	b, _ := json.Marshal(tools)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// matches reports whether a fleet can_do with this location and these
// tags can find anything on the gateway: its zone or a capability's
// location is the one asked, and, for an intent that gives tags only, one of them is in
// its vocabulary.
func (in Info) matches(location string, tags []string, tagsOnly bool) bool {
	if l := strings.ToLower(strings.TrimSpace(location)); l != "" {
		// A capability without a location is in the gateway's zone; with
		// no zone either, it serves every location.
		if !strings.EqualFold(in.Zone, l) && !slices.ContainsFunc(in.Locations, func(x string) bool { return x == "" && in.Zone == "" || strings.EqualFold(x, l) }) {
			return false
		}
	}
	if tagsOnly && len(tags) > 0 && len(in.Vocabulary) > 0 {
		for _, t := range tags {
			for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool { return r == '_' || r == ' ' || r == '-' }) {
				if slices.ContainsFunc(in.Vocabulary, func(v string) bool { return wordMatch(w, v) }) {
					return true
				}
			}
		}
		return false
	}
	return true
}

// wordMatch is the gateway's word match: equal, or one a prefix of the
// other with both at least four letters.
func wordMatch(a, b string) bool {
	if a == b {
		return true
	}
	return len(a) >= 4 && len(b) >= 4 && (strings.HasPrefix(a, b) || strings.HasPrefix(b, a))
}

// routedName is the name of gateway gw's tool on the fleet endpoint:
// read_x on gw1 is read_gw1_x, do_y is do_gw1_y, can_do stays can_do.
func routedName(gw, tool string) string {
	for _, p := range []string{"read_", "do_"} {
		if rest, ok := strings.CutPrefix(tool, p); ok {
			return p + gw + "_" + rest
		}
	}
	return tool
}

// localName undoes routedName for gateway gw.
func localName(gw, routed string) (string, bool) {
	for _, p := range []string{"read_", "do_"} {
		if rest, ok := strings.CutPrefix(routed, p+gw+"_"); ok {
			return p + rest, true
		}
	}
	return "", false
}

// routedSource is a source on the fleet endpoint: <gateway>/<device>,
// the device being the last part of the gateway's own source.
func routedSource(gw, source string) string {
	dev := source[strings.LastIndex(source, "/")+1:]
	if dev == "" {
		dev = gw
	}
	return gw + "/" + dev
}
