package metrics

// A small writer of the Prometheus text exposition format 0.0.4, in place
// of the Prometheus client library: the gateway exports a fixed set of
// counters, gauges and histograms, and the client (with protobuf, which
// the text format does not need) cost the binary about 2 MiB. See
// https://prometheus.io/docs/instrumenting/exposition_formats/.

import (
	"bufio"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// ContentType is the media type of what Metrics.WriteText writes.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Metric types, as the # TYPE line names them.
const (
	typeCounter   = "counter"
	typeGauge     = "gauge"
	typeHistogram = "histogram"
	typeSummary   = "summary"
)

// maxLabels is the most labels a family of this package has.
const maxLabels = 3

// labelValues are a series' label values, in the order of its family's
// label names (unused ones ""): a comparable map key that needs no
// allocation to look up.
type labelValues [maxLabels]string

// family is a metric family whose series are kept here: a counter, gauge
// or histogram with fixed label names. Safe for concurrent use.
type family struct {
	name, help, typ string
	labels          []string
	buckets         []float64 // upper bounds, ascending, without +Inf (histograms)

	mu     sync.RWMutex
	series map[labelValues]*series
}

// series is one labelled series of a family.
type series struct {
	values labelValues
	bits   atomic.Uint64 // counter or gauge: the value's float64 bits

	mu     sync.Mutex // histogram: count, sum and counts change together
	count  uint64
	sum    float64
	counts []uint64 // per bucket, not cumulative; the last is +Inf's
}

func newFamily(name, typ, help string, buckets []float64, labels ...string) *family {
	if len(labels) > maxLabels {
		panic("metrics: " + name + " has more than 3 labels") // programming error in this package
	}
	return &family{name: name, help: help, typ: typ, labels: labels, buckets: buckets, series: map[labelValues]*series{}}
}

// with returns the series of the label values (one per label name),
// making it on first use.
func (f *family) with(values ...string) *series {
	var k labelValues
	copy(k[:], values)
	f.mu.RLock()
	s := f.series[k]
	f.mu.RUnlock()
	if s != nil {
		return s
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s = f.series[k]; s == nil {
		s = &series{values: k}
		if f.typ == typeHistogram {
			s.counts = make([]uint64, len(f.buckets)+1)
		}
		f.series[k] = s
	}
	return s
}

// add adds v to a counter or gauge.
func (s *series) add(v float64) {
	for {
		old := s.bits.Load()
		if s.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// set sets a gauge.
func (s *series) set(v float64) { s.bits.Store(math.Float64bits(v)) }

// observe adds v to a histogram whose upper bounds are buckets.
func (s *series) observe(buckets []float64, v float64) {
	i := sort.SearchFloat64s(buckets, v) // the first bound >= v: le is inclusive
	s.mu.Lock()
	s.counts[i]++
	s.count++
	s.sum += v
	s.mu.Unlock()
}

// sample is one line of the exposition: a name (the family's, or with
// _bucket, _sum, _count), label pairs and a value.
type sample struct {
	suffix string
	labels []string // name, value, name, value, …
	value  float64
}

// snapshot is a family as written at one scrape.
type snapshot struct {
	name, help, typ string
	samples         []sample
}

// snapshot reads the family's series, sorted by their label values.
func (f *family) snapshot() snapshot {
	f.mu.RLock()
	all := make([]*series, 0, len(f.series))
	for _, s := range f.series {
		all = append(all, s)
	}
	f.mu.RUnlock()
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i].values, all[j].values
		for k := range a {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return false
	})
	out := snapshot{name: f.name, help: f.help, typ: f.typ}
	for _, s := range all {
		labels := make([]string, 0, 2*len(f.labels))
		for i, n := range f.labels {
			labels = append(labels, n, s.values[i])
		}
		if f.typ != typeHistogram {
			out.samples = append(out.samples, sample{labels: labels, value: math.Float64frombits(s.bits.Load())})
			continue
		}
		out.samples = append(out.samples, s.histogram(f.buckets, labels)...)
	}
	return out
}

// histogram is the series' _bucket (cumulative, +Inf last), _sum and
// _count lines, read together.
func (s *series) histogram(buckets []float64, labels []string) []sample {
	s.mu.Lock()
	counts := append([]uint64(nil), s.counts...)
	count, sum := s.count, s.sum
	s.mu.Unlock()
	out := make([]sample, 0, len(counts)+2)
	var cum uint64
	for i, n := range counts {
		cum += n
		le := math.Inf(1)
		if i < len(buckets) {
			le = buckets[i]
		}
		out = append(out, sample{suffix: "_bucket", labels: append(labels[:len(labels):len(labels)], "le", formatFloat(le)), value: float64(cum)})
	}
	return append(out, sample{suffix: "_sum", labels: labels, value: sum}, sample{suffix: "_count", labels: labels, value: float64(count)})
}

// writeText writes the families in the text format, sorted by name. A
// family without samples is left out.
func writeText(w io.Writer, fams []snapshot) error {
	sort.SliceStable(fams, func(i, j int) bool { return fams[i].name < fams[j].name })
	bw := bufio.NewWriter(w)
	for _, f := range fams {
		if len(f.samples) == 0 {
			continue
		}
		bw.WriteString("# HELP " + f.name + " " + escapeHelp(f.help) + "\n# TYPE " + f.name + " " + f.typ + "\n")
		for _, s := range f.samples {
			bw.WriteString(f.name + s.suffix)
			if len(s.labels) > 0 {
				bw.WriteByte('{')
				for i := 0; i+1 < len(s.labels); i += 2 {
					if i > 0 {
						bw.WriteByte(',')
					}
					bw.WriteString(s.labels[i] + `="` + escapeLabel(s.labels[i+1]) + `"`)
				}
				bw.WriteByte('}')
			}
			bw.WriteString(" " + formatFloat(s.value) + "\n")
		}
	}
	return bw.Flush()
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// escapeHelp escapes a HELP text: backslash and line feed.
func escapeHelp(s string) string { return helpEscaper.Replace(s) }

// escapeLabel escapes a label value: backslash, double quote and line feed.
func escapeLabel(s string) string { return labelEscaper.Replace(s) }

// formatFloat writes a value as the format wants it: Go's shortest
// representation, +Inf, -Inf or NaN.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
