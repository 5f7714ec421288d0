// Package metrics exports what a gateway does in the Prometheus text
// format: per-capability reads (latency, quality, cache hits), the bus
// transactions and errors behind them, the Modbus circuit breakers, do_*
// outcomes by permission, pending approvals, audit write latency and MCP
// sessions. It implements the observer hooks of packages server and
// capabilities, so that neither depends on Prometheus, and keeps every
// metric in its own registry (nothing global).
package metrics

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// Metrics is a gateway's metrics and their registry. Its methods are safe
// for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	readSeconds   *prometheus.HistogramVec
	reads         *prometheus.CounterVec
	cacheHits     *prometheus.CounterVec
	quality       *prometheus.GaugeVec
	toolSeconds   *prometheus.HistogramVec
	doOutcomes    *prometheus.CounterVec
	sessionsOnce  sync.Once
	auditSeconds  prometheus.Histogram
	auditFailures prometheus.Counter
}

// latencyBuckets span a cached read (microseconds) to a Modbus timeout
// with retries (seconds).
var latencyBuckets = []float64{.0001, .0005, .001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}

// New returns the metrics of a gateway, registered with a new registry
// together with the Go runtime's and the process's collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		readSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "promcp_read_duration_seconds",
			Help: "How long a read of a capability took (cache hits included), by capability.", Buckets: latencyBuckets},
			[]string{"capability"}),
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promcp_reads_total",
			Help: "Reads of a capability, by capability and the quality they answered."}, []string{"capability", "quality"}),
		cacheHits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promcp_read_cache_hits_total",
			Help: "Reads served from the cache (a sample younger than the TTL), by capability."}, []string{"capability"}),
		quality: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "promcp_quality",
			Help: "The quality of a capability's latest reading: 1 for the quality it has, 0 for the others."},
			[]string{"capability", "quality"}),
		toolSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "promcp_tool_call_duration_seconds",
			Help: "How long an MCP tool call took, by tool kind (read, do, can_do).", Buckets: latencyBuckets}, []string{"kind"}),
		doOutcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promcp_do_total",
			Help: "do_* calls by tool, result status and the policy's permission (\"\" when none was asked)."},
			[]string{"tool", "status", "permission"}),
		auditSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "promcp_audit_write_duration_seconds",
			Help: "How long appending a record to the audit log took (until it was durable).", Buckets: latencyBuckets}),
		auditFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "promcp_audit_write_failures_total",
			Help: "Audit records that could not be made durable (the call they record was refused)."}),
	}
	m.reg.MustRegister(m.readSeconds, m.reads, m.cacheHits, m.quality, m.toolSeconds, m.doOutcomes,
		m.auditSeconds, m.auditFailures,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry the metrics are in, to register more.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// ObserveRead implements capabilities.ReadObserver.
func (m *Metrics) ObserveRead(capability string, r capabilities.Reading, d time.Duration) {
	m.readSeconds.WithLabelValues(capability).Observe(d.Seconds())
	m.reads.WithLabelValues(capability, string(r.Quality)).Inc()
	if r.Grounds.Cached {
		m.cacheHits.WithLabelValues(capability).Inc()
	}
	for _, q := range promcp.Qualities() {
		v := 0.0
		if q == r.Quality {
			v = 1
		}
		m.quality.WithLabelValues(capability, string(q)).Set(v)
	}
}

// ToolCalled implements server.Observer.
func (m *Metrics) ToolCalled(tool string, kind promcp.Kind, d time.Duration, status, permission string) {
	m.toolSeconds.WithLabelValues(string(kind)).Observe(d.Seconds())
	if kind == promcp.KindDo {
		m.doOutcomes.WithLabelValues(tool, status, permission).Inc()
	}
}

// Sessions implements server.Observer: promcp_mcp_sessions reads open at
// each scrape. Only the first call counts.
func (m *Metrics) Sessions(open func() int) {
	m.sessionsOnce.Do(func() {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "promcp_mcp_sessions",
			Help: "MCP sessions open now (over HTTP, every endpoint together)."}, func() float64 { return float64(open()) }))
	})
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
	a.m.auditSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		a.m.auditFailures.Inc()
	}
	return err
}

// ApprovalsPending exports promcp_approvals_pending, read from pending at
// each scrape (the operator console's queue of actions waiting for a
// human).
func (m *Metrics) ApprovalsPending(pending func() int) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "promcp_approvals_pending",
		Help: "Actions waiting for a human's approval now."}, func() float64 { return float64(pending()) }))
}

// Capabilities exports what the capabilities' health trackers count, read
// at each scrape: bus transactions, bus errors by class, the smoothed bus
// latency, and the state of each Modbus device's circuit breaker.
func (m *Metrics) Capabilities(set *capabilities.Set) {
	m.reg.MustRegister(&healthCollector{set: set})
}

var (
	descTransactions = prometheus.NewDesc("promcp_bus_transactions_total",
		"Bus transactions (attempts to read the source) behind a capability; reads from the cache count none.", []string{"capability", "driver"}, nil)
	descBusErrors = prometheus.NewDesc("promcp_bus_errors_total",
		"Failed bus transactions behind a capability, by class: timeout, nack, crc, other.", []string{"capability", "driver", "class"}, nil)
	descBusLatency = prometheus.NewDesc("promcp_bus_latency_seconds",
		"Smoothed duration of a capability's bus transactions.", []string{"capability"}, nil)
	descBreaker = prometheus.NewDesc("promcp_breaker_open",
		"1 while a Modbus device's circuit breaker is open (calls refused without touching the line), else 0.", []string{"device", "bus"}, nil)
)

// healthCollector reads capabilities.Health at scrape time.
type healthCollector struct{ set *capabilities.Set }

func (c *healthCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTransactions, descBusErrors, descBusLatency, descBreaker} {
		ch <- d
	}
}

func (c *healthCollector) Collect(ch chan<- prometheus.Metric) {
	type dev struct{ device, bus string }
	breakers := map[dev]bool{}
	for _, cp := range c.set.All() {
		h := cp.Health()
		drv := cp.Binding.Driver
		ch <- prometheus.MustNewConstMetric(descTransactions, prometheus.CounterValue, float64(h.Transactions), cp.Name, drv)
		other := h.Failures - min(h.Failures, h.Timeouts+h.NACKs+h.CRCErrors)
		for class, n := range map[string]uint64{"timeout": h.Timeouts, "nack": h.NACKs, "crc": h.CRCErrors, "other": other} {
			ch <- prometheus.MustNewConstMetric(descBusErrors, prometheus.CounterValue, float64(n), cp.Name, drv, class)
		}
		ch <- prometheus.MustNewConstMetric(descBusLatency, prometheus.GaugeValue, h.Latency.Seconds(), cp.Name)
		if drv == "modbus" {
			d := dev{cp.Binding.Device, cp.Binding.Bus}
			breakers[d] = breakers[d] || (h.ConsecutiveFailures > 0 && errors.Is(h.LastError, modbus.ErrCircuitOpen))
		}
	}
	devs := make([]dev, 0, len(breakers))
	for d := range breakers {
		devs = append(devs, d)
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i].device < devs[j].device })
	for _, d := range devs {
		v := 0.0
		if breakers[d] {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descBreaker, prometheus.GaugeValue, v, d.device, d.bus)
	}
}
