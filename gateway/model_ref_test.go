package gateway_test

// The reference model of TestModel: what the gateway of modelManifest and
// modelPolicy should decide and do, written from the policy and issue 23's
// "one meaning of safe", independently of the gateway's code. It predicts
// each do_* and start_* decision and what a job's end leaves; the driver
// (model_test.go) compares the gateway with it step by step and checks the
// invariants on what the simulated relays saw.

import (
	"slices"
	"strings"
	"time"
)

// The model's gateway: a heater (a dead-man limit, a cooldown, a rate
// limit), a vent interlocked with it both ways, a fan with a dead-man limit
// and no other rule, and a job that holds the heater on.
const modelManifest = `version: 1
gateway: model
buses:
  - {name: gpio, kind: gpio}
devices:
  - {name: heater_relay, bus: gpio, model: gpio_out, pin: GPIO26}
  - {name: vent_relay, bus: gpio, model: gpio_out, pin: GPIO24}
  - {name: fan_relay, bus: gpio, model: gpio_out, pin: GPIO25}
capabilities:
  - {name: heater, type: boolean, ttl: 1s, read: {device: heater_relay}, do: {tool: do_set_heater, side_effects: [heats], compensable: true%s}}
  - {name: vent, type: boolean, ttl: 1s, read: {device: vent_relay}, do: {tool: do_set_vent, side_effects: [vents], compensable: true, safe_value: false}}
  - {name: fan, type: boolean, ttl: 1s, read: {device: fan_relay}, do: {tool: do_set_fan, side_effects: [blows], compensable: true, safe_value: false}}
jobs:
  - name: heat_boost
    hold: {capability: heater, value: true, for: 5m}
`

const modelPolicy = `version: 1
actions:
  do_set_heater:
    max_on: 10m
    cooldown: 1m
    rate_limit: {max: 4, per: 1h}
    interlocks:
      - {read: read_vent, equals: true, when: {equals: true}, reason: no heating with the vent open}
  do_set_vent:
    interlocks:
      - {read: read_heater, equals: true, when: {equals: true}, reason: no venting while the heater runs}
  do_set_fan:
    max_on: 5m
`

// The policy's figures, as the reference model reads them.
const (
	heaterCooldown = time.Minute
	heaterRateMax  = 4
	heaterRatePer  = time.Hour
	boostHold      = 5 * time.Minute
	// deadManRetry is how often a failed revert is retried: the check
	// interval the dead-man bound allows beyond max_on.
	deadManRetry = 10 * time.Second
)

var (
	modelDevices = []string{"heater", "vent", "fan"}
	modelMaxOn   = map[string]time.Duration{"heater": 10 * time.Minute, "fan": 5 * time.Minute}
	modelPins    = map[string]string{"heater": "GPIO26", "vent": "GPIO24", "fan": "GPIO25"}
	// modelTools are the tools whose attempt record covers a write to a
	// relay: its do_* and, for the job's first step, the job's start_*.
	modelTools = map[string][]string{
		"heater": {"do_set_heater", "start_heat_boost"},
		"vent":   {"do_set_vent"},
		"fan":    {"do_set_fan"},
	}
)

// verdict is the reference model's decision of an action.
type verdict int

const (
	vAllow  verdict = iota
	vRefuse         // refused for why
	vUnsure         // the model does not say (a bus fault, a renewal in a revert)
)

// refModel is the reference model's state between steps. The relays'
// values are the world's (the driver resyncs them after every step); the
// model keeps what the gateway must remember.
type refModel struct {
	safeHeater bool // the heater declares safe_value: false
	val        map[string]bool
	// hist are the heater's actuations (every write that reached the
	// relay), which its cooldown and rate limit count.
	hist []refActuation
	// lastOn is when each dead-man limit was last armed: the last write
	// of on that was attempted.
	lastOn   map[string]time.Time
	jobs     []*refJob
	keys     []refKey
	restarts int
	// clearedAt is when the bus faults were last cleared: a revert the
	// fault failed is retried from then.
	clearedAt time.Time
}

// refActuation is one heater actuation; volatile when the disk was full
// as it happened (the gateway kept it in memory only), forgotten once a
// restart followed.
type refActuation struct {
	at                  time.Time
	on                  bool
	volatile, forgotten bool
}

// refJob is a heat_boost job the gateway accepted.
type refJob struct {
	id      string
	n       int // its number in the run, for messages
	found   bool
	until   time.Time
	running bool
	// chain is the found value of the first job of the overlapping jobs
	// it belongs to: what the heater must return to once they all ended.
	chain   bool
	overlap bool // it started while another job held the heater
}

// refKey is an idempotency key a do_* call used.
type refKey struct {
	key, cap string
	val      bool
	kept     bool // its outcome was kept: a replay must not write
	at       time.Time
}

func newRefModel(safeHeater bool) *refModel {
	return &refModel{safeHeater: safeHeater, val: map[string]bool{}, lastOn: map[string]time.Time{}}
}

func (m *refModel) safe(cap string, v bool) bool {
	return !v && (cap != "heater" || m.safeHeater)
}

// running returns the jobs that hold the heater now.
func (m *refModel) running() []*refJob {
	var out []*refJob
	for _, j := range m.jobs {
		if j.running {
			out = append(out, j)
		}
	}
	return out
}

// decide is the model's decision of setting cap to v by a caller at now:
// its verdict and, when refused, why. fault says the relay's bus fails,
// full that the disk is full (which refuses anything but a move to the safe
// value).
func (m *refModel) decide(cap string, v bool, now time.Time, fault, full bool) (verdict, string) {
	if fault {
		return vUnsure, ""
	}
	if m.safe(cap, v) {
		// A move to the safe value always goes ahead: under a full disk
		// too, its records kept and written when the disk has room
		// (docs/architecture.md: one actuation path); on a heater a job holds
		// too (it is a stop).
		return vAllow, ""
	}
	if full {
		return vRefuse, "disk-full"
	}
	if v && cap == "heater" && m.val["vent"] || v && cap == "vent" && m.val["heater"] {
		return vRefuse, "interlock"
	}
	if cap == "heater" {
		switch why := m.limited(now, false); why {
		case "":
		case "ambiguous":
			return vUnsure, ""
		default:
			return vRefuse, why
		}
		if v && len(m.running()) > 0 {
			return vRefuse, "held-by-job"
		}
	}
	return vAllow, ""
}

// limited says whether the heater's cooldown or rate limit refuses an
// actuation at now ("" when not); forgetful leaves out the actuations a
// restart forgot (what a gateway that fails open sees). Two actuations at
// one instant (a manual clock's artifact) count twice in a process and once
// after a restart (the durable history is keyed by time): when that
// decides, it is "ambiguous".
func (m *refModel) limited(now time.Time, forgetful bool) string {
	a, b := m.limitedBy(now, forgetful, false), m.limitedBy(now, forgetful, true)
	if a != b {
		return "ambiguous"
	}
	return a
}

func (m *refModel) limitedBy(now time.Time, forgetful, once bool) string {
	var in []time.Time
	var last time.Time
	for _, a := range m.hist {
		// A move to the safe value made while the disk was full goes ahead
		// with its records kept in memory (docs/architecture.md: one
		// actuation path): a crash forgets it, as documented, so it never counts
		// after a restart. (Nothing else actuates while the disk is full.)
		if (forgetful || !a.on) && a.forgotten || once && slices.ContainsFunc(in, a.at.Equal) {
			continue
		}
		if a.at.After(last) {
			last = a.at
		}
		if a.at.After(now.Add(-heaterRatePer)) && !a.at.After(now) {
			in = append(in, a.at)
		}
	}
	if !last.IsZero() && now.Before(last.Add(heaterCooldown)) {
		return "cooldown"
	}
	if len(in) >= heaterRateMax {
		return "rate-limit"
	}
	return ""
}

// onWritesExceed checks the heater's on-writes against the policy, as a
// write of on at at is added: two are at least the cooldown apart, and at
// most the rate limit's count fall in its period. A safe move is never
// limited, so only moves away from safe are counted. It returns what is
// exceeded, or "".
func (m *refModel) onWritesExceed(at time.Time, forgetful bool) string {
	var ons []time.Time
	for _, a := range m.hist {
		if a.on && !(forgetful && a.forgotten) {
			ons = append(ons, a.at)
		}
	}
	slices.SortFunc(ons, func(a, b time.Time) int { return a.Compare(b) })
	n := 1
	for i, t := range ons {
		if i == len(ons)-1 && at.Sub(t) < heaterCooldown {
			return "two on-writes " + at.Sub(t).String() + " apart, within the cooldown of " + heaterCooldown.String()
		}
		if t.After(at.Add(-heaterRatePer)) {
			n++
		}
	}
	if n > heaterRateMax {
		return "more than 4 on-writes within an hour"
	}
	return ""
}

// restarted forgets what a restart forgets: the actuations recorded while
// the disk was full.
func (m *refModel) restarted() {
	m.restarts++
	for i := range m.hist {
		if m.hist[i].volatile {
			m.hist[i].forgotten = true
		}
	}
	// A day of history is all the gateway keeps; the model keeps a little
	// more than the rate limit's period.
}

// trim drops actuations older than any rule looks back.
func (m *refModel) trim(now time.Time) {
	cut := now.Add(-2 * heaterRatePer)
	i := 0
	for i < len(m.hist) && m.hist[i].at.Before(cut) {
		i++
	}
	m.hist = m.hist[i:]
}

func (m *refModel) histString() string {
	var b []string
	for _, a := range m.hist {
		s := a.at.Format(time.TimeOnly)
		if a.on {
			s += " on"
		} else {
			s += " off"
		}
		if a.forgotten {
			s += " (forgotten)"
		}
		b = append(b, s)
	}
	return strings.Join(b, ", ")
}
