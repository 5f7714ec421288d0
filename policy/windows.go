package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
)

// Time windows are wall-clock times in the window's zone, and wall clocks
// are not continuous: on a daylight-saving change day an hour is skipped
// (spring) or repeated (autumn). The rules, chosen so that a doubt refuses:
//
//   - A deny window covers every moment the wall clock shows a time inside
//     it, at both offsets of a repeated hour, and everything in between: it
//     runs from the first moment the clock reaches its start to the last
//     moment the clock reaches its end. A deny window 02:00–03:00 on the
//     autumn change day in Europe/Amsterdam denies 02:30 CEST and 02:30 CET
//     (two real hours in all), and the repeated hour never opens a hole in
//     a deny window.
//   - An allow window admits a moment only when the wall clock shows a time
//     inside it, at whichever offset.
//   - Wall times skipped by a forward change never happen. A window whose
//     times all fall in the skipped hour is empty that day (02:30–02:45 on
//     the spring change day does not move to 03:30–03:45); one that starts
//     or ends inside the gap starts or ends at the instant of the jump.
//   - A window that crosses midnight belongs to the day it starts on.
//
// valid_until and "allowed again from" are the real instants at which the
// answer changes, found from the zone's own transitions.

// windows refuses outside the allow windows and inside the deny windows,
// and caps validity at the next instant where the answer changes.
func (e *eval) windows(w *manifests.Windows) (Decision, bool) {
	if w == nil || !e.applies(w.When) {
		return Decision{}, false
	}
	now := e.req.Now
	open, why := windowOpen(w, now)
	change, changes := nextWindowChange(w, now, open)
	if !open {
		// The refusal clears where the windows next open. Where they do
		// not open within the horizon (a deny window all day, every day),
		// say so: the answer is only re-checked after valid_until.
		if !changes {
			return e.refuse(promcp.PolicyDenied, why,
				"the time windows do not open in the next 8 days (a deny window covers every hour of the days it names): change the policy to allow this action",
				now.Add(MaxStaticValidity)), true
		}
		return e.refuse(promcp.PolicyDenied, why,
			fmt.Sprintf("allowed again from %s", change.In(w.Location).Format("Mon 2 Jan 15:04 MST")), change), true
	}
	if changes {
		e.cap(change)
	}
	return Decision{}, false
}

// windowOpen reports whether t is inside an allow window (when there are
// any) and outside every deny window, and why not.
func windowOpen(w *manifests.Windows, t time.Time) (bool, string) {
	for _, d := range w.Deny {
		if inWindow(d, w.Location, t, true) {
			return false, fmt.Sprintf("not allowed %s (%s)", describeWindow(d), w.Location)
		}
	}
	if len(w.Allow) == 0 {
		return true, ""
	}
	for _, a := range w.Allow {
		if inWindow(a, w.Location, t, false) {
			return true, ""
		}
	}
	var parts []string
	for _, a := range w.Allow {
		parts = append(parts, describeWindow(a))
	}
	return false, fmt.Sprintf("allowed only %s (%s)", strings.Join(parts, " or "), w.Location)
}

// inWindow reports whether instant t falls in window d in loc: for a deny
// window, between the first instant of its start and the last instant of
// its end; for an allow window, when the wall clock shows a time inside it.
func inWindow(d manifests.Window, loc *time.Location, t time.Time, deny bool) bool {
	wall := wallClock(t, loc)
	today := midnight(wall)
	// Yesterday's window may cross midnight into today; and were a clock
	// to go back across midnight, a deny window of tomorrow may have begun
	// before the clock went back into today.
	for off := -1; off <= 1; off++ {
		day := today.AddDate(0, 0, off)
		if !slices.Contains(d.Days, day.Weekday()) {
			continue
		}
		from, to := wallSpan(d, day)
		if !deny {
			if !wall.Before(from) && wall.Before(to) {
				return true
			}
			continue
		}
		start, _ := instants(loc, from)
		_, end := instants(loc, to)
		if !t.Before(start) && t.Before(end) {
			return true
		}
	}
	return false
}

// wallSpan returns the wall times at which window d opens and closes on
// day (a wall-clock midnight).
func wallSpan(d manifests.Window, day time.Time) (from, to time.Time) {
	from = day.Add(d.From)
	if d.To > d.From {
		return from, day.Add(d.To)
	}
	return from, day.AddDate(0, 0, 1).Add(d.To)
}

// A wall-clock reading (date and time of day, no zone) is held as a
// time.Time in UTC, so that arithmetic on it ignores daylight saving.

// wallClock returns the wall-clock reading of t in loc.
func wallClock(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// midnight returns the start of wall reading w's day.
func midnight(w time.Time) time.Time {
	return time.Date(w.Year(), w.Month(), w.Day(), 0, 0, 0, 0, time.UTC)
}

// offsetPeriod is a stretch of time over which a zone keeps one UTC offset.
// A zero start or end is unbounded.
type offsetPeriod struct {
	start, end time.Time
	offset     time.Duration
}

// periods returns loc's offset periods around wall reading w, in order:
// every instant whose wall clock could show w lies within them (UTC offsets
// are within ±14h).
func periods(loc *time.Location, w time.Time) []offsetPeriod {
	const reach = 26 * time.Hour
	var ps []offsetPeriod
	for t := w.Add(-reach); len(ps) < 16; {
		l := t.In(loc)
		_, off := l.Zone()
		start, end := l.ZoneBounds()
		ps = append(ps, offsetPeriod{start, end, time.Duration(off) * time.Second})
		if end.IsZero() || !end.Before(w.Add(reach)) {
			break
		}
		t = end
	}
	return ps
}

// transitions returns the instants in (from, to] at which loc changes
// offset.
func transitions(loc *time.Location, from, to time.Time) []time.Time {
	var out []time.Time
	for t := from; len(out) < 64; {
		_, end := t.In(loc).ZoneBounds()
		if end.IsZero() || end.After(to) {
			break
		}
		out = append(out, end)
		t = end
	}
	return out
}

// instants returns the first and the last instant at which loc's wall
// clock shows w: the same instant when w happens once, the two offsets of
// a repeated hour when it happens twice, and the instant of the jump when
// w is skipped by a forward change.
func instants(loc *time.Location, w time.Time) (first, last time.Time) {
	ps := periods(loc, w)
	found := false
	for _, p := range ps {
		x := w.Add(-p.offset)
		if (p.start.IsZero() || !x.Before(p.start)) && (p.end.IsZero() || x.Before(p.end)) {
			if !found {
				first, found = x, true
			}
			last = x
		}
	}
	if found {
		return first, last
	}
	for i := 1; i < len(ps); i++ {
		jump := ps[i].start
		if !w.Before(jump.Add(ps[i-1].offset)) && w.Before(jump.Add(ps[i].offset)) {
			return jump, jump
		}
	}
	// Unreachable with consistent zone data: fall back to Go's choice.
	t := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc)
	return t, t
}

// nextWindowChange returns the first instant after t, within eight days,
// at which the windows are no longer as open says they are now.
func nextWindowChange(w *manifests.Windows, t time.Time, open bool) (time.Time, bool) {
	loc := w.Location
	today := midnight(wallClock(t, loc))
	horizon := t.AddDate(0, 0, 9)
	// The answer can change only where a window's start or end is shown or
	// jumped over, or where the offset changes (a backward jump re-enters
	// a window); between two such instants it holds.
	candidates := transitions(loc, t, horizon)
	for _, d := range slices.Concat(w.Allow, w.Deny) {
		for off := -1; off <= 8; off++ {
			day := today.AddDate(0, 0, off)
			if !slices.Contains(d.Days, day.Weekday()) {
				continue
			}
			from, to := wallSpan(d, day)
			for _, x := range []time.Time{from, to} {
				first, last := instants(loc, x)
				candidates = append(candidates, first, last)
			}
		}
	}
	slices.SortFunc(candidates, func(a, b time.Time) int { return a.Compare(b) })
	for _, x := range candidates {
		if !x.After(t) || x.After(horizon) {
			continue
		}
		if now, _ := windowOpen(w, x); now != open {
			return x, true
		}
	}
	return time.Time{}, false
}

func describeWindow(d manifests.Window) string {
	days := "daily"
	if len(d.Days) < 7 {
		var names []string
		for _, wd := range []time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday, time.Saturday, time.Sunday} {
			if slices.Contains(d.Days, wd) {
				names = append(names, wd.String()[:3])
			}
		}
		days = "on " + strings.Join(names, ", ")
	}
	hm := func(x time.Duration) string {
		return fmt.Sprintf("%02d:%02d", int(x/time.Hour), int(x%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%s %s–%s", days, hm(d.From), hm(d.To))
}
