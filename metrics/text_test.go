package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/promcp"
)

// parse reads text with the Prometheus project's own text parser (a test
// dependency only: the binary does not link it), failing on anything it
// refuses.
func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("the output does not parse as the text format 0.0.4: %v\n%s", err, text)
	}
	return fams
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.Label {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

type failingAuditor struct{ err error }

func (a failingAuditor) Append(context.Context, audit.Record) error { return a.err }

// TestTextFormat: every family the gateway exports parses with the
// Prometheus parser under its name and type, with its HELP, and the
// histograms' buckets are cumulative with +Inf equal to the count.
func TestTextFormat(t *testing.T) {
	m := New()
	m.Sessions(func() int { return 2 })
	m.Sessions(func() int { return 99 }) // only the first counts
	m.ApprovalsPending(func() int { return 1 })
	m.ObserveRead("temp", capabilities.Reading{Quality: promcp.QualityGood}, 3*time.Millisecond)
	m.ObserveRead("temp", capabilities.Reading{Quality: promcp.QualityGood, Grounds: capabilities.Grounds{Cached: true}}, 50*time.Microsecond)
	m.ObserveRead("temp", capabilities.Reading{Quality: promcp.QualityGood}, 10*time.Second)
	m.ToolCalled("do_set_heater", promcp.KindDo, time.Millisecond, "success", "allowed")
	m.ToolCalled("read_temp", promcp.KindRead, time.Millisecond, "", "")
	m.Auditor(failingAuditor{errors.New("disk full")}).Append(t.Context(), audit.Record{})

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	fams := parse(t, rec.Body.String())
	for name, typ := range map[string]dto.MetricType{
		"promcp_read_duration_seconds":        dto.MetricType_HISTOGRAM,
		"promcp_reads_total":                  dto.MetricType_COUNTER,
		"promcp_read_cache_hits_total":        dto.MetricType_COUNTER,
		"promcp_quality":                      dto.MetricType_GAUGE,
		"promcp_tool_call_duration_seconds":   dto.MetricType_HISTOGRAM,
		"promcp_do_total":                     dto.MetricType_COUNTER,
		"promcp_audit_write_duration_seconds": dto.MetricType_HISTOGRAM,
		"promcp_audit_write_failures_total":   dto.MetricType_COUNTER,
		"promcp_mcp_sessions":                 dto.MetricType_GAUGE,
		"promcp_approvals_pending":            dto.MetricType_GAUGE,
		"go_goroutines":                       dto.MetricType_GAUGE,
		"go_gc_duration_seconds":              dto.MetricType_SUMMARY,
		"go_memstats_alloc_bytes_total":       dto.MetricType_COUNTER,
		"process_resident_memory_bytes":       dto.MetricType_GAUGE,
	} {
		f := fams[name]
		if f == nil {
			t.Errorf("no family %s", name)
			continue
		}
		if f.GetType() != typ || f.GetHelp() == "" {
			t.Errorf("%s: type %v help %q; want %v with a help text", name, f.GetType(), f.GetHelp(), typ)
		}
	}
	if v := fams["promcp_mcp_sessions"].Metric[0].GetGauge().GetValue(); v != 2 {
		t.Errorf("promcp_mcp_sessions = %v, want 2 (the first function given)", v)
	}
	if v := fams["promcp_audit_write_failures_total"].Metric[0].GetCounter().GetValue(); v != 1 {
		t.Errorf("promcp_audit_write_failures_total = %v, want 1", v)
	}
	h := fams["promcp_read_duration_seconds"].Metric[0].GetHistogram()
	if h.GetSampleCount() != 3 || h.GetSampleSum() != 10.00305 {
		t.Errorf("read histogram: count %d sum %v, want 3 and 10.00305", h.GetSampleCount(), h.GetSampleSum())
	}
	want := map[float64]uint64{.0001: 1, .001: 1, .005: 2, 5: 2} // 10 s is over every bound
	if len(h.Bucket) != len(latencyBuckets)+1 {
		t.Fatalf("%d buckets, want %d and +Inf", len(h.Bucket), len(latencyBuckets))
	}
	if inf := h.Bucket[len(latencyBuckets)]; !math.IsInf(inf.GetUpperBound(), 1) || inf.GetCumulativeCount() != 3 {
		t.Errorf("last bucket le=%v %d, want +Inf 3", inf.GetUpperBound(), inf.GetCumulativeCount())
	}
	for i, b := range h.Bucket[:len(latencyBuckets)] {
		if b.GetUpperBound() != latencyBuckets[i] {
			t.Errorf("bucket %d: le %v, want %v", i, b.GetUpperBound(), latencyBuckets[i])
		}
		if n, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != n {
			t.Errorf("bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), n)
		}
	}
	for _, m := range fams["promcp_quality"].Metric {
		l := labelsOf(m)
		if want := map[bool]float64{true: 1, false: 0}[l["quality"] == "good"]; m.GetGauge().GetValue() != want {
			t.Errorf("promcp_quality%v = %v, want %v", l, m.GetGauge().GetValue(), want)
		}
	}
}

// TestTextEscaping: label values and HELP texts with backslashes, double
// quotes and line feeds come back from the parser as they went in.
func TestTextEscaping(t *testing.T) {
	m := New()
	odd := "a\\b \"quoted\"\nnext line é ∞ {x=\"1\"}"
	m.ToolCalled(odd, promcp.KindDo, time.Millisecond, "error", "")
	help := `C:\path and "quotes"` + "\nsecond line"
	var buf bytes.Buffer
	fams := []snapshot{gauge("odd_help", help, 1)}
	if err := writeText(&buf, fams); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	parsed := parse(t, buf.String())
	if got := parsed["odd_help"].GetHelp(); got != help {
		t.Errorf("HELP came back as %q, want %q", got, help)
	}
	do := parsed["promcp_do_total"]
	if do == nil || len(do.Metric) != 1 {
		t.Fatalf("promcp_do_total: %v", do)
	}
	if l := labelsOf(do.Metric[0]); l["tool"] != odd || l["status"] != "error" || l["permission"] != "" {
		t.Errorf("labels came back as %q, want tool %q, status error, permission empty", l, odd)
	}
}

// TestTextConcurrent: observations and scrapes at once (run with -race)
// lose no observation, and every scrape parses with each histogram's +Inf
// bucket equal to its count.
func TestTextConcurrent(t *testing.T) {
	m := New()
	const writers, each = 8, 500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				m.ObserveRead(fmt.Sprintf("cap%d", i%3), capabilities.Reading{Quality: promcp.QualityGood}, time.Duration(w*i)*time.Microsecond)
				m.ToolCalled("read_x", promcp.KindRead, time.Millisecond, "", "")
			}
		}()
	}
	scrapes := make(chan string)
	go func() {
		defer close(scrapes)
		for range 20 {
			var buf bytes.Buffer
			m.WriteText(&buf)
			scrapes <- buf.String()
		}
	}()
	for text := range scrapes {
		for _, f := range parse(t, text) {
			for _, mm := range f.Metric {
				if h := mm.GetHistogram(); h != nil {
					if inf := h.Bucket[len(h.Bucket)-1].GetCumulativeCount(); inf != h.GetSampleCount() {
						t.Errorf("%s: bucket +Inf has %d of %d observations", f.GetName(), inf, h.GetSampleCount())
					}
				}
			}
		}
	}
	wg.Wait()
	var buf bytes.Buffer
	m.WriteText(&buf)
	fams := parse(t, buf.String())
	var total uint64
	for _, mm := range fams["promcp_read_duration_seconds"].Metric {
		total += mm.GetHistogram().GetSampleCount()
	}
	if total != writers*each {
		t.Errorf("%d reads counted, want %d", total, writers*each)
	}
	if n := fams["promcp_tool_call_duration_seconds"].Metric[0].GetHistogram().GetSampleCount(); n != writers*each {
		t.Errorf("%d tool calls counted, want %d", n, writers*each)
	}
}

// TestObserveAllocs: recording a read or a tool call on a series that
// exists allocates nothing (the hot path of every read).
func TestObserveAllocs(t *testing.T) {
	m := New()
	r := capabilities.Reading{Quality: promcp.QualityGood}
	m.ObserveRead("temp", r, time.Millisecond)
	m.ToolCalled("do_x", promcp.KindDo, time.Millisecond, "success", "allowed")
	if n := testing.AllocsPerRun(100, func() {
		m.ObserveRead("temp", r, time.Millisecond)
		m.ToolCalled("do_x", promcp.KindDo, time.Millisecond, "success", "allowed")
	}); n != 0 {
		t.Errorf("%v allocations per read and tool call, want 0", n)
	}
}
