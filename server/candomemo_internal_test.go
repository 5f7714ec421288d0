package server

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/promcp"
)

// memoReport draws a can_do report: candidates and blocked actions with
// texts that hold quotes, escapes, non-ASCII, and the very keys the kept
// encoding is cut at ("metadata", "timestamp", "claim", "body"), notes,
// observations whose values are objects with those keys, and grounds.
func memoReport(r *rand.Rand) promcp.CapabilityReport {
	texts := []string{"", "fan", `say "metadata":{"timestamp":"2026-11-30T12:00:00Z","total_latency_ms":3}`,
		`"claim":"can_do at 2026-11-30T12:00:00Z`, `"body":"sha256:00`, "°C ± 0.5", "<&>", "a\\b\nc", "\u2028"}
	text := func() string { return texts[r.IntN(len(texts))] }
	at := time.Date(2026, 11, 30, 12, 0, 0, r.IntN(2)*int(time.Millisecond)*r.IntN(999), time.UTC)
	perms := []promcp.Permission{promcp.Allowed, promcp.RequiresHumanApproval, promcp.PolicyDenied, promcp.CooldownActive, promcp.OutOfRange}
	rep := promcp.CapabilityReport{Context: promcp.ReportContext{CurrentObservations: map[string]promcp.Observation{}}}
	for i := range r.IntN(4) {
		lo, hi := float64(i), 50.5
		c := promcp.Candidate{Capability: "do_x" + string(rune('a'+i)), Source: "gw/" + text(), Confidence: float64(r.IntN(11)) / 10,
			Permission: perms[r.IntN(2)], SideEffects: []string{text()}, ValidUntil: at.Add(time.Duration(r.IntN(5000)) * time.Millisecond),
			EstimatedLatencyMS: int64(r.IntN(100)), Reason: text(), DeviceID: "gw", MatchReasons: []string{"tag_overlap: " + text()}}
		if r.IntN(2) == 0 {
			c.CurrentState = &promcp.State{Value: r.Float64(), Unit: "°C", Timestamp: at, Quality: promcp.QualityGood}
			c.Constraints = promcp.Constraints{Min: &lo, Max: &hi, Unit: "°C"}
		}
		rep.Candidates = append(rep.Candidates, c)
	}
	for i := range r.IntN(3) {
		rep.Blocked = append(rep.Blocked, promcp.Blocked{Capability: "do_y" + string(rune('a'+i)), Source: "gw/y", Permission: perms[2+r.IntN(3)], Reason: text()})
	}
	for i := range r.IntN(3) {
		v := any(map[string]any{"metadata": map[string]any{"timestamp": at.Format(time.RFC3339Nano), "total_latency_ms": i}, "claim": text()})
		if i == 0 {
			v = text()
		}
		tool := "read_" + string(rune('a'+i))
		rep.Context.RelatedReads = append(rep.Context.RelatedReads, tool)
		rep.Context.CurrentObservations[tool] = promcp.Observation{Value: v, Timestamp: at, Quality: promcp.QualityGood}
	}
	rep.Metadata.Note = text()
	intent := promcp.Intent{Action: text(), SemanticTags: []string{text()}, Location: text()}
	rep.Evidence = &promcp.Evidence{Grounds: &promcp.CanDoGrounds{Intent: intent, Scope: "local"}}
	rep.Normalize()
	return rep
}

// TestCanDoMemoEqualsFreshEncode: for 2,000 drawn reports, the bytes made
// from a kept encoding with new per-call parts (query_id, timestamp,
// latency) are exactly those of encoding the report afresh with those
// parts: the body, the stamp (claim and body digest included) and the
// whole result as sent. A kept encoding is for callers restricted alike.
func TestCanDoMemoEqualsFreshEncode(t *testing.T) {
	s, err := New("memo", "test", WithClock(clock.NewManual(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))),
		WithWarrant("sha256:"+strings.Repeat("ab", 32), ""))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CanDo("test", func(context.Context, promcp.CanDoRequest) (promcp.CapabilityReport, error) {
		return promcp.CapabilityReport{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(28, 3))
	operator, viewer := Caller{Role: "operator"}, Caller{Role: RoleViewer}
	n := 2000
	if testing.Short() {
		n = 300
	}
	for i := range n {
		rep := memoReport(r)
		first := rep
		first.QueryID, first.Metadata.Timestamp, first.Metadata.TotalLatencyMS = newUUID(), time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), int64(r.IntN(3))
		first.Memo = &promcp.Memo{}
		res, err := s.encode("can_do", first, false)
		if err != nil {
			t.Fatal(err)
		}
		s.keepEncoded(first, operator, res)
		kept, _ := first.Memo.Load().(*canDoMemo)
		if kept == nil {
			t.Fatalf("report %d: no encoding kept for %s", i, res.StructuredContent)
		}
		if s.fromMemo(first.Memo, viewer, time.Now()) != nil {
			t.Fatalf("report %d: the encoding kept for an operator was given to a viewer, who may not act", i)
		}
		again := rep
		again.QueryID = newUUID()
		again.Metadata.Timestamp = time.Date(2026+r.IntN(3), 12, 1, r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1e9), time.UTC)
		again.Metadata.TotalLatencyMS = int64(r.IntN(100000))
		body, stamp := kept.make(again.QueryID, again.Metadata.Timestamp.Format(time.RFC3339Nano), again.Metadata.TotalLatencyMS)
		want, err := s.encode("can_do", again, false)
		if err != nil {
			t.Fatal(err)
		}
		made := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(body))}, StructuredContent: json.RawMessage(body),
			Result: mcp.Result{Meta: &mcp.Meta{AdditionalFields: map[string]any{ProvenanceKey: json.RawMessage(stamp)}}}}
		got, _ := json.Marshal(made)
		fresh, _ := json.Marshal(want)
		if string(got) != string(fresh) {
			t.Fatalf("report %d: made from the kept encoding:\n%s\nencoded afresh:\n%s", i, got, fresh)
		}
	}
}
