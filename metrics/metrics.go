// Package metrics exports what a gateway does in the Prometheus text
// format: per-capability reads (latency, quality, cache hits), the bus
// transactions and errors behind them, the Modbus circuit breakers, do_*
// outcomes by permission, pending approvals, audit write latency and MCP
// sessions. It implements the observer hooks of packages server and
// capabilities, so that neither depends on a metrics library, keeps every
// metric in its own Metrics (nothing global) and writes the text format
// itself (text.go), without the Prometheus client library.
package metrics

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sort"
	"sync/atomic"
	"time"

	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// Metrics is a gateway's metrics. Its methods are safe for concurrent use.
type Metrics struct {
	readSeconds   *family
	reads         *family
	cacheHits     *family
	quality       *family
	toolSeconds   *family
	doOutcomes    *family
	auditSeconds  *family
	auditFailures *family

	// Read at each scrape; nil until set.
	sessions atomic.Pointer[func() int]
	pending  atomic.Pointer[func() int]
	set      atomic.Pointer[capabilities.Set]
}

// latencyBuckets span a cached read (microseconds) to a Modbus timeout
// with retries (seconds).
var latencyBuckets = []float64{.0001, .0005, .001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}

// New returns the metrics of a gateway; the Go runtime's and the
// process's figures are read at each scrape.
func New() *Metrics {
	m := &Metrics{
		readSeconds: newFamily("promcp_read_duration_seconds", typeHistogram,
			"How long a read of a capability took (cache hits included), by capability.", latencyBuckets, "capability"),
		reads: newFamily("promcp_reads_total", typeCounter,
			"Reads of a capability, by capability and the quality they answered.", nil, "capability", "quality"),
		cacheHits: newFamily("promcp_read_cache_hits_total", typeCounter,
			"Reads served from the cache (a sample younger than the TTL), by capability.", nil, "capability"),
		quality: newFamily("promcp_quality", typeGauge,
			"The quality of a capability's latest reading: 1 for the quality it has, 0 for the others.", nil, "capability", "quality"),
		toolSeconds: newFamily("promcp_tool_call_duration_seconds", typeHistogram,
			"How long an MCP tool call took, by tool kind (read, do, can_do).", latencyBuckets, "kind"),
		doOutcomes: newFamily("promcp_do_total", typeCounter,
			"do_* calls by tool, result status and the policy's permission (\"\" when none was asked).", nil, "tool", "status", "permission"),
		auditSeconds: newFamily("promcp_audit_write_duration_seconds", typeHistogram,
			"How long appending a record to the audit log took (until it was durable).", latencyBuckets),
		auditFailures: newFamily("promcp_audit_write_failures_total", typeCounter,
			"Audit records that could not be made durable (the call they record was refused).", nil),
	}
	// Unlabelled families have their one series from the start, as the
	// Prometheus client's did.
	m.auditSeconds.with()
	m.auditFailures.with()
	return m
}

// WriteText writes every metric in the Prometheus text format 0.0.4
// (ContentType).
func (m *Metrics) WriteText(w io.Writer) error {
	var fams []snapshot
	for _, f := range []*family{m.readSeconds, m.reads, m.cacheHits, m.quality, m.toolSeconds, m.doOutcomes,
		m.auditSeconds, m.auditFailures} {
		fams = append(fams, f.snapshot())
	}
	if open := m.sessions.Load(); open != nil {
		fams = append(fams, gauge("promcp_mcp_sessions", "MCP sessions open now (over HTTP, every endpoint together).", float64((*open)())))
	}
	if pending := m.pending.Load(); pending != nil {
		fams = append(fams, gauge("promcp_approvals_pending", "Actions waiting for a human's approval now.", float64((*pending)())))
	}
	if set := m.set.Load(); set != nil {
		fams = append(fams, health(set)...)
	}
	fams = append(fams, goRuntime()...)
	fams = append(fams, process()...)
	return writeText(w, fams)
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		if err := m.WriteText(&buf); err != nil {
			http.Error(w, "writing the metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", ContentType)
		w.Write(buf.Bytes())
	})
}

// ObserveRead implements capabilities.ReadObserver.
func (m *Metrics) ObserveRead(capability string, r capabilities.Reading, d time.Duration) {
	m.readSeconds.with(capability).observe(latencyBuckets, d.Seconds())
	m.reads.with(capability, string(r.Quality)).add(1)
	if r.Grounds.Cached {
		m.cacheHits.with(capability).add(1)
	}
	for _, q := range promcp.Qualities() {
		v := 0.0
		if q == r.Quality {
			v = 1
		}
		m.quality.with(capability, string(q)).set(v)
	}
}

// ToolCalled implements server.Observer.
func (m *Metrics) ToolCalled(tool string, kind promcp.Kind, d time.Duration, status, permission string) {
	m.toolSeconds.with(string(kind)).observe(latencyBuckets, d.Seconds())
	if kind == promcp.KindDo {
		m.doOutcomes.with(tool, status, permission).add(1)
	}
}

// Sessions implements server.Observer: promcp_mcp_sessions reads open at
// each scrape. Only the first call counts.
func (m *Metrics) Sessions(open func() int) {
	m.sessions.CompareAndSwap(nil, &open)
}

var (
	_ server.Observer           = (*Metrics)(nil)
	_ capabilities.ReadObserver = (*Metrics)(nil)
)

// Auditor times the appends of next (server.Auditor) and counts those
// that fail.
func (m *Metrics) Auditor(next server.Auditor) server.Auditor {
	return timedAuditor{next: next, m: m}
}

type timedAuditor struct {
	next server.Auditor
	m    *Metrics
}

func (a timedAuditor) Append(ctx context.Context, r audit.Record) error {
	start := time.Now()
	err := a.next.Append(ctx, r)
	a.m.auditSeconds.with().observe(latencyBuckets, time.Since(start).Seconds())
	if err != nil {
		a.m.auditFailures.with().add(1)
	}
	return err
}

// ApprovalsPending exports promcp_approvals_pending, read from pending at
// each scrape (the operator console's queue of actions waiting for a
// human). A later call replaces an earlier one.
func (m *Metrics) ApprovalsPending(pending func() int) {
	m.pending.Store(&pending)
}

// Capabilities exports what the capabilities' health trackers count, read
// at each scrape: bus transactions, bus errors by class, the smoothed bus
// latency, and the state of each Modbus device's circuit breaker. A later
// call replaces an earlier one.
func (m *Metrics) Capabilities(set *capabilities.Set) {
	m.set.Store(set)
}

// health reads capabilities.Health at scrape time.
func health(set *capabilities.Set) []snapshot {
	tx := snapshot{name: "promcp_bus_transactions_total", typ: typeCounter,
		help: "Bus transactions (attempts to read the source) behind a capability; reads from the cache count none."}
	errs := snapshot{name: "promcp_bus_errors_total", typ: typeCounter,
		help: "Failed bus transactions behind a capability, by class: timeout, nack, crc, other."}
	lat := snapshot{name: "promcp_bus_latency_seconds", typ: typeGauge,
		help: "Smoothed duration of a capability's bus transactions."}
	brk := snapshot{name: "promcp_breaker_open", typ: typeGauge,
		help: "1 while a Modbus device's circuit breaker is open (calls refused without touching the line), else 0."}
	type dev struct{ device, bus string }
	breakers := map[dev]bool{}
	for _, cp := range set.All() {
		h := cp.Health()
		drv := cp.Binding.Driver
		tx.samples = append(tx.samples, sample{labels: []string{"capability", cp.Name, "driver", drv}, value: float64(h.Transactions)})
		other := h.Failures - min(h.Failures, h.Timeouts+h.NACKs+h.CRCErrors)
		for _, c := range []struct {
			class string
			n     uint64
		}{{"crc", h.CRCErrors}, {"nack", h.NACKs}, {"other", other}, {"timeout", h.Timeouts}} {
			errs.samples = append(errs.samples, sample{labels: []string{"capability", cp.Name, "driver", drv, "class", c.class}, value: float64(c.n)})
		}
		lat.samples = append(lat.samples, sample{labels: []string{"capability", cp.Name}, value: h.Latency.Seconds()})
		if drv == "modbus" {
			d := dev{cp.Binding.Device, cp.Binding.Bus}
			breakers[d] = breakers[d] || (h.ConsecutiveFailures > 0 && errors.Is(h.LastError, modbus.ErrCircuitOpen))
		}
	}
	devs := make([]dev, 0, len(breakers))
	for d := range breakers {
		devs = append(devs, d)
	}
	sort.Slice(devs, func(i, j int) bool {
		if devs[i].device != devs[j].device {
			return devs[i].device < devs[j].device
		}
		return devs[i].bus < devs[j].bus
	})
	for _, d := range devs {
		v := 0.0
		if breakers[d] {
			v = 1
		}
		brk.samples = append(brk.samples, sample{labels: []string{"device", d.device, "bus", d.bus}, value: v})
	}
	return []snapshot{tx, errs, lat, brk}
}
