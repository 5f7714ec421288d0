package promcp_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/promcp/promcp-device/promcp"
)

// pick returns one of vs, chosen by r: the first (always a valid value)
// four times in five, else any, so that about as many generated reports
// are valid as are not.
func pick[T any](r *rand.Rand, vs ...T) T {
	if r.IntN(5) > 0 {
		return vs[0]
	}
	return vs[r.IntN(len(vs))]
}

// genReport builds a report from pools of valid values mixed with values
// the schema refuses (empty names, unknown enums, nil lists, negative
// counts, bad patterns), each field chosen independently, so that reports
// valid and invalid in one or several places are both common.
func genReport(r *rand.Rand) promcp.CapabilityReport {
	ts := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	perms := append(promcp.Permissions(), "", "maybe")
	perms[0], perms[1] = promcp.RequiresHumanApproval, promcp.Allowed // valid for blocked too
	f := func(v float64) *float64 { return &v }
	rep := promcp.CapabilityReport{
		QueryID:  pick(r, "q-1", "", " "),
		Feasible: r.IntN(2) == 0,
		Context: promcp.ReportContext{
			RelatedReads:        pick(r, []string{}, nil, []string{"read_t"}),
			CurrentObservations: pick(r, map[string]promcp.Observation{}, nil, map[string]promcp.Observation{"read_t": {Value: 1.5, Quality: "bogus"}}),
			Location:            pick(r, "", "zone1"),
		},
		Metadata: promcp.ReportMetadata{Timestamp: pick(r, ts, time.Time{}), TotalLatencyMS: pick[int64](r, 0, 3, -1), Note: pick(r, "", "n")},
	}
	if r.IntN(8) == 0 {
		rep.Error = &promcp.Error{Code: pick(r, "", "internal"), Message: pick(r, "", "m")}
	}
	if r.IntN(10) > 0 {
		rep.Candidates = []promcp.Candidate{}
		rep.Blocked = []promcp.Blocked{}
	}
	for range r.IntN(3) {
		c := promcp.Candidate{
			Capability: pick(r, "fan", ""), Source: pick(r, "do_fan", ""),
			Confidence: pick(r, 0, 0.5, 1, -0.1, 1.01), Permission: pick(r, perms...),
			Constraints: promcp.Constraints{
				Min: pick(r, nil, f(0), f(-3)), Max: pick(r, nil, f(100)), Unit: pick[promcp.Unit](r, "", "%"),
				EnumValues: pick(r, []string{}, nil, []string{"on"}), Step: pick(r, nil, f(0.5), f(0), f(-1)),
			},
			SideEffects: pick(r, []string{}, nil, []string{"noise"}), ValidUntil: pick(r, ts, time.Time{}),
			EstimatedLatencyMS: pick[int64](r, 0, 20, -1), Reason: pick(r, "", "why"),
			RequiresConfirmation: r.IntN(2) == 0, DeviceID: pick(r, "", "gw1"),
			MatchReasons:         pick(r, nil, []string{}, []string{"tag_overlap: cooling"}),
			EstimatedEffectLagMS: pick[int64](r, 0, 500, -5), RevertAt: pick(r, nil, &ts),
		}
		if r.IntN(2) == 0 {
			c.CurrentState = &promcp.State{Value: pick[any](r, 21.5, "on", nil, true), Unit: pick[promcp.Unit](r, "", "°C"),
				Timestamp: pick(r, ts, time.Time{}), Quality: pick[promcp.Quality](r, "", "good", "error", "bogus")}
		}
		if r.IntN(2) == 0 {
			c.RateLimit = &promcp.CandidateRateLimit{Max: pick(r, "6/hour", "1/", "/hour", "six/hour", "12", ""),
				CurrentWindowRemaining: pick(r, 0, 5, -1)}
		}
		rep.Candidates = append(rep.Candidates, c)
	}
	for range r.IntN(3) {
		d := "detail"
		rep.Blocked = append(rep.Blocked, promcp.Blocked{
			Capability: pick(r, "heater", ""), Source: pick(r, "do_heater", ""), Permission: pick(r, perms...),
			Reason: pick(r, "interlock", "", " "), Details: pick(r, nil, &d), ValidUntil: pick(r, nil, &ts),
			DeviceID: pick(r, "", "gw1"),
		})
	}
	return rep
}

// TestCheckSchemaEqualsSchema keeps the typed check and the published
// can_do output schema equal: over generated reports, valid and broken in
// one or several places, CheckSchema accepts exactly the reports whose
// encoding the JSON Schema validator accepts.
func TestCheckSchemaEqualsSchema(t *testing.T) {
	v, err := promcp.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(28, 3))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	var accepted, refused int
	for i := range n {
		rep := genReport(r)
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatalf("report %d does not encode: %v", i, err)
		}
		schemaErr := v.Validate(string(promcp.KindCanDo), b)
		typedErr := rep.CheckSchema()
		if (schemaErr == nil) != (typedErr == nil) {
			t.Fatalf("report %d: schema says %v, typed check says %v\n%s", i, schemaErr, typedErr, b)
		}
		if schemaErr == nil {
			accepted++
		} else {
			refused++
		}
	}
	t.Logf("%d reports: %d accepted by both, %d refused by both", n, accepted, refused)
	if accepted < n/20 || refused < n/20 {
		t.Fatalf("generator is lopsided: %d accepted, %d refused", accepted, refused)
	}
}
