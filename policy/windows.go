package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
)

// windows refuses outside the allow windows and inside the deny windows,
// and caps validity at the next window boundary.
func (e *eval) windows(w *manifests.Windows) (Decision, bool) {
	if w == nil || !e.applies(w.When) {
		return Decision{}, false
	}
	now := e.req.Now
	edges := windowEdges(w, now)
	if open, why := windowOpen(w, now); !open {
		// The refusal may clear at the first edge where the windows open.
		clear := now.Add(MaxStaticValidity)
		for _, t := range edges {
			if ok, _ := windowOpen(w, t); ok {
				clear = t
				break
			}
		}
		return e.refuse(promcp.PolicyDenied, why,
			fmt.Sprintf("allowed again from %s", clear.In(w.Location).Format("Mon 15:04 MST")), clear), true
	}
	if len(edges) > 0 {
		e.cap(edges[0])
	}
	return Decision{}, false
}

// windowOpen reports whether t is inside an allow window (when there are
// any) and outside every deny window, and why not.
func windowOpen(w *manifests.Windows, t time.Time) (bool, string) {
	for _, d := range w.Deny {
		if inWindow(d, w.Location, t) {
			return false, fmt.Sprintf("not allowed %s (%s)", describeWindow(d), w.Location)
		}
	}
	if len(w.Allow) == 0 {
		return true, ""
	}
	for _, a := range w.Allow {
		if inWindow(a, w.Location, t) {
			return true, ""
		}
	}
	var parts []string
	for _, a := range w.Allow {
		parts = append(parts, describeWindow(a))
	}
	return false, fmt.Sprintf("allowed only %s (%s)", strings.Join(parts, " or "), w.Location)
}

// inWindow reports whether t falls in window d in loc. A window that
// crosses midnight belongs to the day it starts on.
func inWindow(d manifests.Window, loc *time.Location, t time.Time) bool {
	lt := t.In(loc)
	for back := 0; back <= 1; back++ {
		day := time.Date(lt.Year(), lt.Month(), lt.Day()-back, 0, 0, 0, 0, loc)
		if !slices.Contains(d.Days, day.Weekday()) {
			continue
		}
		start, end := bounds(d, day, loc)
		if !t.Before(start) && t.Before(end) {
			return true
		}
	}
	return false
}

func bounds(d manifests.Window, day time.Time, loc *time.Location) (start, end time.Time) {
	at := func(day time.Time, off time.Duration) time.Time {
		return time.Date(day.Year(), day.Month(), day.Day(), int(off/time.Hour), int(off%time.Hour/time.Minute), 0, 0, loc)
	}
	start = at(day, d.From)
	if d.To > d.From {
		return start, at(day, d.To)
	}
	return start, at(day.AddDate(0, 0, 1), d.To)
}

// windowEdges returns the window boundaries after t within eight days,
// sorted.
func windowEdges(w *manifests.Windows, t time.Time) []time.Time {
	lt := t.In(w.Location)
	var edges []time.Time
	for _, d := range slices.Concat(w.Allow, w.Deny) {
		for off := -1; off <= 8; off++ {
			day := time.Date(lt.Year(), lt.Month(), lt.Day()+off, 0, 0, 0, 0, w.Location)
			if !slices.Contains(d.Days, day.Weekday()) {
				continue
			}
			s, e := bounds(d, day, w.Location)
			for _, x := range []time.Time{s, e} {
				if x.After(t) {
					edges = append(edges, x)
				}
			}
		}
	}
	slices.SortFunc(edges, func(a, b time.Time) int { return a.Compare(b) })
	return slices.CompactFunc(edges, func(a, b time.Time) bool { return a.Equal(b) })
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
