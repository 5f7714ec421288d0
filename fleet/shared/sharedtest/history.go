package sharedtest

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Outcome is how an operation of a History ended.
type Outcome int

// The outcomes of an operation: a client knows it succeeded (OK), knows it
// did not happen (Failed: refused, or an error that says nothing ran), or
// cannot tell (Unknown: a timeout, a lost reply).
const (
	Pending Outcome = iota
	OK
	Failed
	Unknown
)

func (o Outcome) String() string {
	return [...]string{"pending", "ok", "failed", "unknown"}[o]
}

// Op is one operation a client invoked: a do_* (reserve, actuate,
// commit) or an idempotent call.
type Op struct {
	Client  string // the gateway (or process) that invoked it
	Action  string
	Key     string // idempotency key; "" when none
	Invoked time.Time
	Ended   time.Time
	Outcome Outcome
	Reason  string // a refusal's permission, or the error
}

// Exec is one execution of an actuator, as the actuator saw it.
type Exec struct {
	Client, Action, Key string
	At                  time.Time
	// Deadline is the calling context's deadline (zero: none).
	Deadline time.Time
}

// Hold is one reservation of a shared actuator, from the claim to the
// commit: granted by the hubs, then executed, then settled.
type Hold struct {
	Client, Unit string
	Invoked      time.Time     // the claim was made
	Granted      time.Time     // the reservation was returned
	Settle       time.Time     // the commit was invoked (execution over)
	Committed    bool          // the commit succeeded
	Lease        time.Duration // the lease the claim asked
}

// History records what concurrent clients did during a fault scenario,
// for checks once it is over. Safe for concurrent use.
type History struct {
	mu    sync.Mutex
	ops   []*Op
	execs []Exec
	holds []Hold
	marks []mark
}

type mark struct {
	at   time.Time
	what string
}

// Invoke records an operation as invoked now and returns it for End.
func (h *History) Invoke(client, action, key string) *Op {
	op := &Op{Client: client, Action: action, Key: key, Invoked: time.Now()}
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
	return op
}

// End records how op ended, now.
func (h *History) End(op *Op, o Outcome, reason string) {
	h.mu.Lock()
	op.Ended, op.Outcome, op.Reason = time.Now(), o, reason
	h.mu.Unlock()
}

// Executed records an execution of an actuator now.
func (h *History) Executed(e Exec) {
	e.At = time.Now()
	h.mu.Lock()
	h.execs = append(h.execs, e)
	h.mu.Unlock()
}

// Held records a reservation.
func (h *History) Held(r Hold) {
	h.mu.Lock()
	h.holds = append(h.holds, r)
	h.mu.Unlock()
}

// Mark records an event of the scenario (a fault injected or healed) now,
// and returns its time.
func (h *History) Mark(what string) time.Time {
	now := time.Now()
	h.mu.Lock()
	h.marks = append(h.marks, mark{now, what})
	h.mu.Unlock()
	return now
}

// Ops returns a copy of the operations recorded.
func (h *History) Ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Op, len(h.ops))
	for i, op := range h.ops {
		out[i] = *op
	}
	return out
}

// Execs returns the executions recorded.
func (h *History) Execs() []Exec {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.execs)
}

// Check checks the history against the fleet's invariants and returns
// every violation: no more executions of an action in any window than
// its limit (fleet-wide, limits by action), an idempotency key executed
// at most once, nothing executed after its deadline, no two reservations
// of one unit executing at once unless the first one's lease had lapsed
// (and then its commit failed).
func (h *History) Check(limits map[string]Limit) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var v []string
	v = append(v, checkRate(h.execs, limits)...)
	v = append(v, checkOnce(h.execs)...)
	v = append(v, checkDeadlines(h.execs)...)
	v = append(v, checkLeases(h.holds)...)
	return v
}

// CheckHealthy returns the operations of the healthy clients that were
// refused as unreachable or without quorum: a healthy gateway is never
// reported unreachable.
func (h *History) CheckHealthy(healthy []string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var v []string
	for _, op := range h.ops {
		if op.Outcome != OK && slices.Contains(healthy, op.Client) && unreachable(op.Reason) {
			v = append(v, fmt.Sprintf("healthy %s refused as unreachable: %s %s at %s: %s", op.Client, op.Action, op.Key, op.Invoked.Format("15:04:05.000"), op.Reason))
		}
	}
	return v
}

// Limit is a rate limit: at most Max executions in any window of Per.
type Limit struct {
	Max int
	Per time.Duration
}

func unreachable(reason string) bool {
	for _, s := range []string{"partition_no_quorum", "unreachable", "no quorum"} {
		if strings.Contains(reason, s) {
			return true
		}
	}
	return false
}

func checkRate(execs []Exec, limits map[string]Limit) []string {
	var v []string
	for action, l := range limits {
		var at []time.Time
		for _, e := range execs {
			if e.Action == action {
				at = append(at, e.At)
			}
		}
		sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
		for i := range at {
			n := 0
			for j := i; j < len(at) && at[j].Sub(at[i]) < l.Per; j++ {
				n++
			}
			if n > l.Max {
				v = append(v, fmt.Sprintf("%s executed %d times in %s from %s, limit %d", action, n, l.Per, at[i].Format("15:04:05.000"), l.Max))
				break
			}
		}
	}
	return v
}

func checkOnce(execs []Exec) []string {
	var v []string
	seen := map[string]int{}
	for _, e := range execs {
		if e.Key == "" {
			continue
		}
		if seen[e.Key]++; seen[e.Key] == 2 {
			v = append(v, fmt.Sprintf("idempotency key %s executed more than once (again by %s)", e.Key, e.Client))
		}
	}
	return v
}

func checkDeadlines(execs []Exec) []string {
	var v []string
	for _, e := range execs {
		if !e.Deadline.IsZero() && e.At.After(e.Deadline) {
			v = append(v, fmt.Sprintf("%s %s executed by %s %s after its deadline", e.Action, e.Key, e.Client, e.At.Sub(e.Deadline)))
		}
	}
	return v
}

// checkLeases: two holds of one unit execute at once (the later granted
// before the earlier invoked its commit, while the earlier was granted
// before the later's commit) only when the earlier's lease had lapsed
// when the later was granted, and then the earlier's commit must fail.
// The lease is counted from the claim's invocation, before the hubs
// wrote it: a lapse seen here has surely happened on the hubs.
func checkLeases(holds []Hold) []string {
	var v []string
	for i, a := range holds {
		for j, b := range holds {
			if i == j || a.Unit != b.Unit || b.Granted.Before(a.Granted) {
				continue
			}
			if !b.Granted.Before(a.Settle) || !a.Granted.Before(b.Settle) {
				continue // not at once
			}
			lapsed := a.Lease > 0 && !b.Granted.Before(a.Invoked.Add(a.Lease))
			if !lapsed || a.Committed {
				v = append(v, fmt.Sprintf("%s: %s's reservation (granted %s, lease %s, committed %v) and %s's (granted %s) executed at once",
					a.Unit, a.Client, a.Granted.Format("15:04:05.000"), a.Lease, a.Committed, b.Client, b.Granted.Format("15:04:05.000")))
			}
		}
	}
	return v
}

// Figures are a scenario's timings and counts, for a table.
type Figures struct {
	Ops, OK, Failed, Unknown int
	// Refuse is the longest an operation took to end Failed (a refusal's
	// time); Recover the time from the heal mark to the first OK after it.
	Refuse, Recover time.Duration
	// Longest is the longest operation of any outcome.
	Longest time.Duration
}

// Figures sums the operations up; heal is the time a fault ended (zero:
// none).
func (h *History) Figures(heal time.Time) Figures {
	var f Figures
	var first time.Time
	for _, op := range h.Ops() {
		f.Ops++
		d := op.Ended.Sub(op.Invoked)
		f.Longest = max(f.Longest, d)
		switch op.Outcome {
		case OK:
			f.OK++
			if !heal.IsZero() && op.Invoked.After(heal) && (first.IsZero() || op.Ended.Before(first)) {
				first = op.Ended
			}
		case Failed:
			f.Failed++
			f.Refuse = max(f.Refuse, d)
		default:
			f.Unknown++
		}
	}
	if !first.IsZero() {
		f.Recover = first.Sub(heal)
	}
	return f
}

// Table formats scenario figures as a Markdown table, one row each.
func Table(rows map[string]Figures, order []string) string {
	var b strings.Builder
	b.WriteString("| scenario | ops | ok | failed | unknown | longest refusal | recovery after heal | longest op |\n")
	b.WriteString("| --- | --: | --: | --: | --: | --: | --: | --: |\n")
	for _, name := range order {
		f, ok := rows[name]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s | %s | %s |\n", name, f.Ops, f.OK, f.Failed, f.Unknown,
			dur(f.Refuse), dur(f.Recover), dur(f.Longest))
	}
	return b.String()
}

func dur(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	return d.Round(time.Millisecond).String()
}
