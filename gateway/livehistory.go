package gateway

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/promcp/promcp-device/history"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/server"
)

// historyBody answers a history query: the samples themselves (no step),
// or their buckets.
type historyBody struct {
	Capability string            `json:"capability"`
	Unit       *string           `json:"unit"`
	Since      time.Time         `json:"since"`
	Until      time.Time         `json:"until"`
	Step       string            `json:"step,omitempty"`
	Agg        history.Agg       `json:"agg,omitempty"`
	Samples    []history.Sample  `json:"samples,omitempty"`
	Buckets    []history.Bucket  `json:"buckets,omitempty"`
	Count      int               `json:"sample_count"`
	Source     string            `json:"source"`
	Kept       map[string]string `json:"kept"`
}

// historyQuery is a history template's arguments, checked.
type historyQuery struct {
	o     *observed
	since time.Time
	step  time.Duration
	agg   history.Agg
}

// history answers a read of promcp://<gateway>/history/{capability}{?since,step,agg}.
func (l *live) history(ctx context.Context, uri string, args map[string]string) (any, error) {
	now := l.clock.Now()
	q, err := l.parseQuery(uri, args, now)
	if err != nil {
		return nil, err
	}
	c := q.o.c
	var samples []history.Sample
	source := "memory"
	if l.opts.Store != nil {
		if samples, err = l.opts.Store.Since(c.Name, q.since); err != nil {
			return nil, err
		}
		source = "disk"
	} else {
		samples = q.o.series.Since(q.since)
	}
	b := historyBody{Capability: c.Name, Since: q.since.UTC(), Until: now.UTC(), Count: len(samples), Source: source,
		Kept: map[string]string{"ring": fmt.Sprint(c.History.RingSize())}}
	if c.Unit != "" {
		b.Unit = &c.Unit
	}
	if l.opts.Store != nil {
		b.Kept["retention"] = c.History.Keep().String()
	}
	if q.step == 0 {
		b.Samples = samples
		if b.Samples == nil {
			b.Samples = []history.Sample{}
		}
		for i := range b.Samples {
			b.Samples[i].Time = b.Samples[i].Time.UTC()
		}
		return b, nil
	}
	b.Step, b.Agg = q.step.String(), q.agg
	// Buckets start on multiples of the step (10:20, 10:30 for 10m), the
	// first one holding the samples from since only.
	if b.Buckets, err = history.Aggregate(samples, q.since.Truncate(q.step), q.step, q.agg); err != nil {
		return nil, &server.ArgError{Arg: "agg", Msg: err.Error()}
	}
	if b.Buckets == nil {
		b.Buckets = []history.Bucket{}
	}
	for i := range b.Buckets {
		b.Buckets[i].Start = b.Buckets[i].Start.UTC()
	}
	return b, nil
}

// parseQuery checks the template's arguments, naming the one that is
// wrong.
func (l *live) parseQuery(uri string, args map[string]string, now time.Time) (historyQuery, error) {
	var q historyQuery
	name := args["capability"]
	if u, err := url.Parse(uri); err == nil {
		name = strings.TrimPrefix(u.Path, "/history/")
	}
	o, ok := l.names[name]
	if !ok {
		names := make([]string, 0, len(l.names))
		for n := range l.names {
			names = append(names, n)
		}
		slices.Sort(names)
		return q, &server.ArgError{Arg: "capability", Msg: fmt.Sprintf("%q is not a capability of this gateway (want one of %s)", name, strings.Join(names, ", "))}
	}
	q.o = o
	q.since = now.Add(-DefaultHistorySince)
	if s := args["since"]; s != "" {
		if d, err := time.ParseDuration(s); err == nil && d > 0 {
			q.since = now.Add(-d)
		} else if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			q.since = t
		} else {
			return q, &server.ArgError{Arg: "since", Msg: fmt.Sprintf("%q (want an RFC 3339 time such as 2026-03-01T06:00:00Z, or a duration back from now such as 15m)", s)}
		}
		if q.since.After(now) {
			return q, &server.ArgError{Arg: "since", Msg: fmt.Sprintf("%q is in the future (now is %s)", s, now.UTC().Format(time.RFC3339))}
		}
	}
	if s := args["step"]; s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return q, &server.ArgError{Arg: "step", Msg: fmt.Sprintf("%q (want a duration of more than 0, such as 1m)", s)}
		}
		if n := now.Sub(q.since) / d; n > MaxHistoryBuckets {
			return q, &server.ArgError{Arg: "step", Msg: fmt.Sprintf("%s makes %d buckets since %s (want at most %d: a larger step or a later since)", s, n, q.since.UTC().Format(time.RFC3339), MaxHistoryBuckets)}
		}
		q.step = d
	}
	numeric := o.c.Type == manifests.TypeNumber || o.c.Type == manifests.TypeInteger
	q.agg = history.Last
	if numeric {
		q.agg = history.Mean
	}
	if s := args["agg"]; s != "" {
		if !slices.Contains(history.Aggs, history.Agg(s)) {
			return q, &server.ArgError{Arg: "agg", Msg: fmt.Sprintf("%q (want mean, min, max or last)", s)}
		}
		q.agg = history.Agg(s)
		if !numeric && q.agg != history.Last {
			return q, &server.ArgError{Arg: "agg", Msg: fmt.Sprintf("%s needs numbers; %s is a %s (want last)", s, name, o.c.Type)}
		}
		if q.step == 0 {
			return q, &server.ArgError{Arg: "agg", Msg: "an aggregate needs a step (such as step=1m)"}
		}
	}
	return q, nil
}
