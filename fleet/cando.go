package fleet

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// CanDo answers a fleet can_do as PhysMCP's floating coordinator: it asks
// the registered gateways whose zone and tags can match the intent (only
// gateway only, when not ""), waits for them within the budget (and no
// longer than needed: it returns when all have answered), merges their
// CapabilityReports under fleet names (tools namespaced by gateway,
// sources <gateway>/<device>), and reports each gateway that did not
// answer in time as blocked with source_unreachable. Answers that come
// after the budget are dropped (counted in LateAnswers). The server that
// serves the report derives feasible from the merged candidates.
func (v *View) CanDo(ctx context.Context, req promcp.CanDoRequest, only string) promcp.CapabilityReport {
	start := v.cfg.Clock.Now()
	gateways := v.Gateways()
	targets := targetsOf(gateways, req, only)
	rep := promcp.CapabilityReport{QueryID: newQueryID(),
		Context: promcp.ReportContext{RelatedReads: []string{}, CurrentObservations: map[string]promcp.Observation{}, Location: req.Intent.Location}}
	meta := &promcp.MeshMetadata{CoordinatorNode: v.cfg.Node, PeersConsulted: len(targets), MeshSizeEstimate: len(gateways)}
	rep.Metadata.MeshMetadata = meta
	replies, late := v.scatter(ctx, rep.QueryID, req, targets)
	meta.ResponsesReceived, meta.ResponsesDroppedLate = len(replies), late
	answered := make(map[string]bool, len(replies))
	grow(&rep, replies)
	for _, r := range replies {
		answered[r.GatewayID] = true
		v.merge(&rep, r)
	}
	for _, id := range targets {
		if !answered[id] {
			details := fmt.Sprintf("registered in the fleet, but did not answer within the %s budget: the gateway, its link to the hub, or the hub path is down or slow; its local endpoint may still serve", v.cfg.Budget)
			rep.Blocked = append(rep.Blocked, promcp.Blocked{Capability: "*", Source: id + "/*", Permission: promcp.SourceUnreachable,
				Reason: "gateway " + id + " unreachable", Details: &details, DeviceID: id})
		}
	}
	slices.SortStableFunc(rep.Candidates, func(a, b promcp.Candidate) int { return cmp.Compare(b.Confidence, a.Confidence) })
	meta.PartitionState = v.partitionState(ctx, len(targets) > len(answered))
	rep.Metadata.Note = v.note(rep, targets, answered, len(gateways))
	rep.Metadata.Timestamp = start.UTC()
	return rep
}

// targetsOf are the gateways (of gateways, by id order) a query goes to.
func targetsOf(gateways []Info, req promcp.CanDoRequest, only string) []string {
	tagsOnly := strings.TrimSpace(req.Intent.Action) == "" && strings.TrimSpace(req.Intent.Target) == ""
	var out []string
	for _, in := range gateways {
		if only != "" && in.GatewayID != only {
			continue
		}
		if len(req.ScopeDevices) > 0 && !slices.Contains(req.ScopeDevices, in.GatewayID) {
			continue
		}
		if in.matches(req.Intent.Location, req.Intent.SemanticTags, tagsOnly) {
			out = append(out, in.GatewayID)
		}
	}
	return out
}

// scatter asks each target gateway on its own subject
// (promcp.cando.<gw>.<node>), every request with its own reply subject
// under this node's inbox naming the gateway (scatterReply), and gathers the answers until all came or the
// budget ran out. An answer is the answer of the gateway its request was
// addressed to (the reply subject says which; only that gateway may
// publish on it, by NATS's permissions), never
// of whatever gateway its body names. Answers after the budget are
// dropped: those already queued are counted in late, and the subscription
// stays open one more budget in the background to count the rest
// (LateAnswers), without holding the caller.
func (v *View) scatter(ctx context.Context, queryID string, req promcp.CanDoRequest, targets []string) (replies []canDoAnswer, late int) {
	if len(targets) == 0 {
		return nil, 0
	}
	args, _ := json.Marshal(map[string]any{"intent": req.Intent, "scope": "local"})
	c := server.CallerFrom(ctx)
	// Real time: the deadline and the budget bound a NATS scatter-gather.
	data, _ := json.Marshal(canDoRequest{QueryID: queryID, Arguments: args, Caller: wireCaller{Name: c.Name, Role: c.Role},
		Credential: c.Credential, Deadline: time.Now().Add(v.cfg.Budget).UTC()})
	token := newRequestToken()
	ch := make(chan *nats.Msg, len(targets)+8)
	sub, err := v.nc.ChanSubscribe(InboxPrefix(v.cfg.Node)+".*."+token+".*", ch)
	if err != nil {
		return nil, 0
	}
	for i, gw := range targets {
		if err := v.nc.PublishRequest(CanDoSubject(gw, v.cfg.Node), scatterReply(v.cfg.Node, gw, token, i), data); err != nil {
			sub.Unsubscribe()
			return nil, 0
		}
	}
	deadline := time.NewTimer(v.cfg.Budget)
	defer deadline.Stop()
	seen := map[int]bool{}
	for len(seen) < len(targets) {
		select {
		case m := <-ch:
			i, ok := scatterIndex(m.Subject, targets)
			if !ok || seen[i] {
				continue
			}
			seen[i] = true
			if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
				continue // no responders: the gateway is not reachable, no need to wait for it
			}
			var r canDoAnswer
			if code := m.Header.Get(micro.ErrorCodeHeader); code != "" {
				r.Error = code + " " + m.Header.Get(micro.ErrorHeader)
			} else if err := json.Unmarshal(m.Data, &r); err != nil {
				r = canDoAnswer{Error: "unreadable answer: " + err.Error()}
			}
			if r.GatewayID != targets[i] {
				if r.GatewayID != "" {
					v.cfg.Log.Warn("fleet: a can_do answer names another gateway than the one asked; taken as the asked one's",
						"asked", targets[i], "named", r.GatewayID)
				}
				r.GatewayID = targets[i]
			}
			replies = append(replies, r)
		case <-deadline.C:
			late = v.drainLate(sub, ch)
			return replies, late
		case <-ctx.Done():
			sub.Unsubscribe()
			return replies, 0
		}
	}
	sub.Unsubscribe()
	return replies, 0
}

// scatterReply is the reply subject of request i of a scatter to gateway
// gw: _INBOX.<node>.<gw>.<token>.<i>, which only gw (or a hub) may
// publish on.
func scatterReply(node, gw, token string, i int) string {
	return ReplyPrefix(node, gw) + "." + token + "." + strconv.Itoa(i)
}

// scatterIndex is the index of the request a scatter answer on subject
// (_INBOX.<node>.<gw>.<token>.<i>) answers, when its responder token
// names the gateway asked at that index.
func scatterIndex(subject string, targets []string) (int, bool) {
	t := strings.Split(subject, ".")
	if len(t) != 5 {
		return 0, false
	}
	i, err := strconv.Atoi(t[4])
	if err != nil || i < 0 || i >= len(targets) || t[2] != targets[i] {
		return 0, false
	}
	return i, true
}

// newRequestToken is a random inbox token.
func newRequestToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// drainLate counts the answers already queued after the budget, then
// keeps counting in the background for one more budget.
func (v *View) drainLate(sub *nats.Subscription, ch chan *nats.Msg) int {
	n := 0
	for {
		select {
		case <-ch:
			n++
			continue
		default:
		}
		break
	}
	v.late.Add(int64(n))
	go func() {
		t := time.NewTimer(v.cfg.Budget)
		defer t.Stop()
		defer sub.Unsubscribe()
		for {
			select {
			case <-ch:
				v.late.Add(1)
			case <-t.C:
				return
			}
		}
	}()
	return n
}

// canDoAnswer is a gateway's answer (canDoReply) as the coordinator
// decodes it: in one pass, its report's parts that merge reads only
// (candidates, blocked, context), nil when it had none.
type canDoAnswer struct {
	GatewayID string        `json:"gateway_id"`
	Report    *answerReport `json:"report"`
	Error     string        `json:"error,omitempty"`
}

// answerReport is what merge reads of a gateway's CapabilityReport.
type answerReport struct {
	Candidates []promcp.Candidate   `json:"candidates"`
	Blocked    []promcp.Blocked     `json:"blocked"`
	Context    promcp.ReportContext `json:"context"`
}

// grow makes room in rep for the candidates and blocked entries of
// replies at once.
func grow(rep *promcp.CapabilityReport, replies []canDoAnswer) {
	var c, b int
	for _, r := range replies {
		if r.Report != nil {
			c, b = c+len(r.Report.Candidates), b+len(r.Report.Blocked)
		}
	}
	rep.Candidates = slices.Grow(rep.Candidates, c)
	rep.Blocked = slices.Grow(rep.Blocked, b)
}

// merge adds one gateway's report under fleet names.
func (v *View) merge(rep *promcp.CapabilityReport, r canDoAnswer) {
	gw := r.GatewayID
	g := r.Report
	if r.Error != "" || g == nil {
		msg := r.Error
		if msg == "" {
			msg = "the gateway's can_do answer could not be read"
		}
		rep.Blocked = append(rep.Blocked, promcp.Blocked{Capability: "*", Source: gw + "/*", Permission: promcp.SourceUnreachable,
			Reason: "gateway " + gw + " failed to answer: " + msg, DeviceID: gw})
		return
	}
	for _, c := range g.Candidates {
		c.Capability = routedName(gw, c.Capability)
		c.Source = routedSource(gw, c.Source)
		c.DeviceID = gw
		rep.Candidates = append(rep.Candidates, c)
	}
	for _, b := range g.Blocked {
		b.Capability = routedName(gw, b.Capability)
		b.Source = routedSource(gw, b.Source)
		b.DeviceID = gw
		rep.Blocked = append(rep.Blocked, b)
	}
	for _, t := range g.Context.RelatedReads {
		rep.Context.RelatedReads = append(rep.Context.RelatedReads, routedName(gw, t))
	}
	for t, o := range g.Context.CurrentObservations {
		rep.Context.CurrentObservations[routedName(gw, t)] = o
	}
	if rep.Context.ImpliedTarget == "" && g.Context.ImpliedTarget != "" {
		rep.Context.ImpliedTarget = g.Context.ImpliedTarget
	}
}

// partitionState is where this node stands: isolated from the hub,
// missing some gateways (suspected_partition), or healthy.
func (v *View) partitionState(ctx context.Context, missing bool) string {
	switch {
	case !v.HubReachable(ctx):
		return StateIsolated
	case missing:
		return StateSuspected
	}
	return StateHealthy
}

// note says where each candidate's tool is served and who did not answer.
func (v *View) note(rep promcp.CapabilityReport, targets []string, answered map[string]bool, registered int) string {
	var parts []string
	if len(targets) == 0 {
		parts = append(parts, fmt.Sprintf("no registered gateway can match this intent (%d registered)", registered))
	}
	var silent []string
	for _, id := range targets {
		if !answered[id] {
			silent = append(silent, id)
		}
	}
	if len(silent) > 0 {
		parts = append(parts, "no answer in time from "+strings.Join(silent, ", ")+" (blocked as source_unreachable)")
	}
	if len(rep.Candidates) > 0 {
		var where []string
		for _, c := range rep.Candidates {
			if g, ok := v.groupOf(c.DeviceID, c.Capability); ok {
				where = append(where, c.Capability+" at /mcp/"+g)
			}
		}
		if len(where) > 0 {
			parts = append(parts, "call a candidate on its gateway's group endpoint: "+strings.Join(where, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// groupOf is the group endpoint that serves routed tool name of gateway gw.
func (v *View) groupOf(gw, name string) (string, bool) {
	in, ok := v.Gateway(gw)
	if !ok {
		return "", false
	}
	for _, g := range groupTools(in) {
		if slices.Contains(g.tools, name) {
			return g.name, true
		}
	}
	return "", false
}
