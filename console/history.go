package console

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/server"
)

// chartRange is one of the spans a chart shows, with the step of its
// buckets.
type chartRange struct {
	Name  string
	Since time.Duration
	Step  time.Duration
}

// chartRanges are the spans a capability's chart offers: the last hour, a
// day and a week.
var chartRanges = []chartRange{
	{"1h", time.Hour, time.Minute},
	{"24h", 24 * time.Hour, 15 * time.Minute},
	{"7d", 7 * 24 * time.Hour, 2 * time.Hour},
}

// historyTemplate is the name under which the gateway registers its
// history resource template.
const historyTemplate = "history"

// chartBucket is one bucket of a chart: its start, the aggregate (nil in a
// bucket of errors only), the worst quality and how many samples.
type chartBucket struct {
	Start   time.Time      `json:"start"`
	Value   any            `json:"value"`
	Quality string         `json:"quality"`
	Samples int            `json:"samples"`
	Counts  map[string]int `json:"quality_counts,omitempty"`
}

// chartData is what the page draws: the buckets of one capability over
// one range.
type chartData struct {
	Capability string        `json:"capability"`
	Unit       string        `json:"unit"`
	Range      string        `json:"range"`
	Since      time.Time     `json:"since"`
	Until      time.Time     `json:"until"`
	Step       string        `json:"step"`
	StepMS     int64         `json:"step_ms"`
	Agg        string        `json:"agg"`
	Buckets    []chartBucket `json:"buckets"`
}

// errNoHistory is a console whose gateway serves no history.
var errNoHistory = errors.New("this gateway keeps no history")

// chart queries the history of capability cap over the range named rng,
// as the history resource answers it (since, step, agg).
func (c *Console) chart(r *http.Request, v viewer, capName, rng string) (chartData, int, error) {
	var cr *chartRange
	for i := range chartRanges {
		if chartRanges[i].Name == rng {
			cr = &chartRanges[i]
		}
	}
	if cr == nil {
		return chartData{}, http.StatusBadRequest, fmt.Errorf("range %q: want 1h, 24h or 7d", rng)
	}
	agg := "mean"
	if cp := c.capability(capName); cp != nil && cp.Type != manifests.TypeNumber && cp.Type != manifests.TypeInteger {
		agg = "last"
	}
	args := map[string]string{"capability": capName, "since": cr.Since.String(), "step": cr.Step.String(), "agg": agg}
	uri := fmt.Sprintf("promcp://%s/history/%s?since=%s&step=%s&agg=%s", c.cfg.Gateway, capName, args["since"], args["step"], agg)
	ctx := server.WithCaller(r.Context(), v.Caller)
	body, err := c.cfg.Server.ReadTemplate(ctx, historyTemplate, uri, args)
	if err != nil {
		var ae *server.ArgError
		if errors.As(err, &ae) {
			return chartData{}, http.StatusBadRequest, err
		}
		return chartData{}, http.StatusNotFound, fmt.Errorf("%w: %w", errNoHistory, err)
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return chartData{}, http.StatusInternalServerError, err
	}
	var got struct {
		Unit    *string       `json:"unit"`
		Since   time.Time     `json:"since"`
		Until   time.Time     `json:"until"`
		Buckets []chartBucket `json:"buckets"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		return chartData{}, http.StatusInternalServerError, err
	}
	d := chartData{Capability: capName, Range: cr.Name, Since: got.Since, Until: got.Until, Step: cr.Step.String(),
		StepMS: cr.Step.Milliseconds(), Agg: agg, Buckets: got.Buckets}
	if got.Unit != nil {
		d.Unit = *got.Unit
	}
	if d.Buckets == nil {
		d.Buckets = []chartBucket{}
	}
	return d, http.StatusOK, nil
}

// history answers the page's chart with a capability's buckets as JSON
// (GET /console/history?capability=NAME&range=1h), or, at
// /console/history.csv, the same query as CSV.
func (c *Console) history(w http.ResponseWriter, r *http.Request) {
	v, ok := c.who(r)
	if !ok {
		http.Error(w, "log in again", http.StatusUnauthorized)
		return
	}
	q := r.URL.Query()
	name, rng := q.Get("capability"), q.Get("range")
	if rng == "" {
		rng = "1h"
	}
	d, status, err := c.chart(r, v, name, rng)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	if r.URL.Path == "/console/history.csv" {
		writeCSV(w, d)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(d)
}

// writeCSV writes the buckets of d as CSV, one row a bucket, with a header.
func writeCSV(w http.ResponseWriter, d chartData) {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-%s.csv"`, d.Capability, d.Range))
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"start", "capability", d.Agg, "unit", "quality", "samples", "good", "stale", "degraded", "error"})
	for _, b := range d.Buckets {
		val := ""
		if b.Value != nil {
			val = formatValue(b.Value)
		}
		n := func(q string) string {
			if b.Counts == nil {
				if q == "good" {
					return strconv.Itoa(b.Samples)
				}
				return "0"
			}
			return strconv.Itoa(b.Counts[q])
		}
		_ = cw.Write([]string{b.Start.UTC().Format(time.RFC3339), d.Capability, val, d.Unit, b.Quality, strconv.Itoa(b.Samples),
			n("good"), n("stale"), n("degraded"), n("error")})
	}
	cw.Flush()
}

// capability is the manifest's capability named name, or nil.
func (c *Console) capability(name string) *manifests.Capability {
	if c.cfg.Manifest == nil {
		return nil
	}
	for i := range c.cfg.Manifest.Capabilities {
		if c.cfg.Manifest.Capabilities[i].Name == name {
			return &c.cfg.Manifest.Capabilities[i]
		}
	}
	return nil
}

// doCapability is the manifest's capability whose do_* tool is tool, or nil.
func (c *Console) doCapability(tool string) *manifests.Capability {
	if c.cfg.Manifest == nil {
		return nil
	}
	for i := range c.cfg.Manifest.Capabilities {
		if d := c.cfg.Manifest.Capabilities[i].Do; d != nil && d.Tool == tool {
			return &c.cfg.Manifest.Capabilities[i]
		}
	}
	return nil
}
