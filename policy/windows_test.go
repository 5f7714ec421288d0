package policy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/promcp"
)

// at parses a wall time with its UTC offset, "2026-10-25 02:30 +02:00", so
// that each instant in the tests below is unambiguous.
func at(t *testing.T, s string) time.Time {
	t.Helper()
	x, err := time.Parse("2006-01-02 15:04 -07:00", s)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// zone loads the time zone name, failing the test or benchmark without it.
func zone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("loading %s: %v", name, err)
	}
	return loc
}

func hm(s string) time.Duration {
	d, _ := time.ParseDuration(strings.Replace(s, ":", "h", 1) + "m")
	return d
}

var allDays = []time.Weekday{0, 1, 2, 3, 4, 5, 6}

func deny(loc *time.Location, from, to string) *manifests.Windows {
	return &manifests.Windows{Location: loc, Deny: []manifests.Window{{Days: allDays, From: hm(from), To: hm(to)}}}
}

func allow(loc *time.Location, from, to string) *manifests.Windows {
	return &manifests.Windows{Location: loc, Allow: []manifests.Window{{Days: allDays, From: hm(from), To: hm(to)}}}
}

func decide(w *manifests.Windows, now time.Time) policy.Decision {
	return policy.Evaluator{}.Evaluate(policy.Request{Action: "do_open_vent", Type: manifests.TypeBoolean,
		Value: true, HasValue: true, Role: "operator", Now: now, Rules: &manifests.ActionPolicy{Windows: w}})
}

// TestZoneChanges pins the change days the DST tests rely on, so that a
// wrong date in a test fails here rather than passing vacuously.
func TestZoneChanges(t *testing.T) {
	for _, tc := range []struct {
		zone, before, after string
	}{
		{"Europe/Amsterdam", "2026-03-29 01:59 +01:00", "2026-03-29 03:00 +02:00"},
		{"Europe/Amsterdam", "2026-10-25 02:59 +02:00", "2026-10-25 02:00 +01:00"},
		{"America/New_York", "2026-03-08 01:59 -05:00", "2026-03-08 03:00 -04:00"},
		{"America/New_York", "2026-11-01 01:59 -04:00", "2026-11-01 01:00 -05:00"},
		{"Australia/Sydney", "2026-04-05 02:59 +11:00", "2026-04-05 02:00 +10:00"},
		{"Australia/Sydney", "2026-10-04 01:59 +10:00", "2026-10-04 03:00 +11:00"},
		{"America/Santiago", "2026-04-04 23:59 -03:00", "2026-04-04 23:00 -04:00"},
		{"America/Santiago", "2026-09-05 23:59 -04:00", "2026-09-06 01:00 -03:00"},
	} {
		loc := zone(t, tc.zone)
		b, a := at(t, tc.before), at(t, tc.after)
		if a.Sub(b) != time.Minute {
			t.Fatalf("%s: %s and %s are not a minute apart", tc.zone, tc.before, tc.after)
		}
		_, boff := b.In(loc).Zone()
		_, aoff := a.In(loc).Zone()
		_, wantB := b.Zone()
		_, wantA := a.Zone()
		if boff != wantB || aoff != wantA {
			t.Errorf("%s: offsets %d→%d around %s, want %d→%d", tc.zone, boff, aoff, a.UTC(), wantB, wantA)
		}
	}
}

// TestWindowsAcrossDST evaluates windows on the change days of a European,
// an American and two southern hemisphere zones, both directions. until is
// valid_until when allowed (capped at a minute ahead) and the instant the
// refusal clears when refused.
func TestWindowsAcrossDST(t *testing.T) {
	ams := zone(t, "Europe/Amsterdam")
	ny := zone(t, "America/New_York")
	syd := zone(t, "Australia/Sydney")
	scl := zone(t, "America/Santiago")
	sundays := func(loc *time.Location, kind, from, to string) *manifests.Windows {
		w := manifests.Window{Days: []time.Weekday{time.Sunday}, From: hm(from), To: hm(to)}
		if kind == "deny" {
			return &manifests.Windows{Location: loc, Deny: []manifests.Window{w}}
		}
		return &manifests.Windows{Location: loc, Allow: []manifests.Window{w}}
	}
	saturdays := func(loc *time.Location, from, to string) *manifests.Windows {
		return &manifests.Windows{Location: loc, Deny: []manifests.Window{{Days: []time.Weekday{time.Saturday}, From: hm(from), To: hm(to)}}}
	}
	tests := []struct {
		name    string
		w       *manifests.Windows
		now     string
		allowed bool
		until   string
	}{
		// Europe, autumn: 02:00–03:00 happens twice (CEST, then CET).
		{"ams autumn deny before", deny(ams, "02:00", "03:00"), "2026-10-25 01:59 +02:00", true, "2026-10-25 02:00 +02:00"},
		{"ams autumn deny 02:30 CEST", deny(ams, "02:00", "03:00"), "2026-10-25 02:30 +02:00", false, "2026-10-25 03:00 +01:00"},
		{"ams autumn deny 02:30 CET", deny(ams, "02:00", "03:00"), "2026-10-25 02:30 +01:00", false, "2026-10-25 03:00 +01:00"},
		{"ams autumn deny after", deny(ams, "02:00", "03:00"), "2026-10-25 03:00 +01:00", true, "2026-10-25 03:01 +01:00"},
		{"ams autumn deny starting in the repeated hour has no hole", deny(ams, "02:30", "04:00"), "2026-10-25 02:10 +01:00", false, "2026-10-25 04:00 +01:00"},
		{"ams autumn deny starting in the repeated hour, first pass before it", deny(ams, "02:30", "04:00"), "2026-10-25 02:29 +02:00", true, "2026-10-25 02:30 +02:00"},
		{"ams autumn allow past its end, open again when the clock goes back", allow(ams, "01:00", "02:30"), "2026-10-25 02:45 +02:00", false, "2026-10-25 02:00 +01:00"},
		{"ams autumn allow second pass", allow(ams, "01:00", "02:30"), "2026-10-25 02:29 +01:00", true, "2026-10-25 02:30 +01:00"},
		// Europe, spring: 02:00–03:00 does not happen.
		{"ams spring allow in the gap is empty, not moved to 03:30", allow(ams, "02:30", "02:45"), "2026-03-29 03:35 +02:00", false, "2026-03-30 02:30 +02:00"},
		{"ams spring allow in the gap, before it", allow(ams, "02:30", "02:45"), "2026-03-29 01:59 +01:00", false, "2026-03-30 02:30 +02:00"},
		{"ams spring deny in the gap is empty", deny(ams, "02:30", "02:45"), "2026-03-29 03:35 +02:00", true, "2026-03-29 03:36 +02:00"},
		{"ams spring deny ending in the gap ends at the jump", deny(ams, "01:30", "02:30"), "2026-03-29 01:45 +01:00", false, "2026-03-29 03:00 +02:00"},
		{"ams spring deny starting in the gap starts at the jump", deny(ams, "02:30", "03:30"), "2026-03-29 01:59 +01:00", true, "2026-03-29 03:00 +02:00"},
		{"ams spring deny starting in the gap, inside", deny(ams, "02:30", "03:30"), "2026-03-29 03:00 +02:00", false, "2026-03-29 03:30 +02:00"},
		// Windows that cross midnight, over a change night.
		{"ams autumn night deny, before", deny(ams, "22:00", "06:00"), "2026-10-24 21:59 +02:00", true, "2026-10-24 22:00 +02:00"},
		{"ams autumn night deny, in the repeated hour", deny(ams, "22:00", "06:00"), "2026-10-25 02:30 +01:00", false, "2026-10-25 06:00 +01:00"},
		{"ams autumn night deny, ends at 06:00 CET", deny(ams, "22:00", "06:00"), "2026-10-25 05:59 +01:00", false, "2026-10-25 06:00 +01:00"},
		{"ams spring night deny, ends at 06:00 CEST", deny(ams, "22:00", "06:00"), "2026-03-29 05:59 +02:00", false, "2026-03-29 06:00 +02:00"},
		{"ams spring night allow, open until 06:00 CEST", allow(ams, "22:00", "06:00"), "2026-03-29 05:59 +02:00", true, "2026-03-29 06:00 +02:00"},
		{"ams spring night allow, after", allow(ams, "22:00", "06:00"), "2026-03-29 06:00 +02:00", false, "2026-03-29 22:00 +02:00"},
		// America, autumn: 01:00–02:00 happens twice (EDT, then EST).
		{"ny autumn deny 01:30 EDT", deny(ny, "01:00", "02:00"), "2026-11-01 01:30 -04:00", false, "2026-11-01 02:00 -05:00"},
		{"ny autumn deny 01:30 EST", deny(ny, "01:00", "02:00"), "2026-11-01 01:30 -05:00", false, "2026-11-01 02:00 -05:00"},
		{"ny autumn allow 01:00-02:00 refused before", allow(ny, "01:00", "02:00"), "2026-11-01 00:30 -04:00", false, "2026-11-01 01:00 -04:00"},
		{"ny autumn allow 01:00-02:00 in the second pass", allow(ny, "01:00", "02:00"), "2026-11-01 01:59 -05:00", true, "2026-11-01 02:00 -05:00"},
		// America, spring: 02:00–03:00 does not happen.
		{"ny spring allow in the gap is empty", allow(ny, "02:15", "02:45"), "2026-03-08 03:20 -04:00", false, "2026-03-09 02:15 -04:00"},
		{"ny spring deny in the gap is empty", deny(ny, "02:15", "02:45"), "2026-03-08 03:20 -04:00", true, "2026-03-08 03:21 -04:00"},
		{"ny spring deny across the gap", deny(ny, "01:30", "03:30"), "2026-03-08 03:10 -04:00", false, "2026-03-08 03:30 -04:00"},
		// Southern hemisphere: Sydney's autumn is in April, spring in October.
		{"syd april deny 02:30 AEDT", deny(syd, "02:00", "03:00"), "2026-04-05 02:30 +11:00", false, "2026-04-05 03:00 +10:00"},
		{"syd april deny 02:30 AEST", deny(syd, "02:00", "03:00"), "2026-04-05 02:30 +10:00", false, "2026-04-05 03:00 +10:00"},
		{"syd october allow in the gap is empty", allow(syd, "02:30", "02:45"), "2026-10-04 03:35 +11:00", false, "2026-10-05 02:30 +11:00"},
		{"syd october deny in the gap is empty", deny(syd, "02:30", "02:45"), "2026-10-04 03:35 +11:00", true, "2026-10-04 03:36 +11:00"},
		// Santiago changes at midnight: Saturday 23:00–24:00 happens twice in
		// April, and Sunday 00:00–01:00 does not happen in September.
		{"scl april sat deny 23:30 -03", saturdays(scl, "23:00", "24:00"), "2026-04-04 23:30 -03:00", false, "2026-04-05 00:00 -04:00"},
		{"scl april sat deny 23:30 -04", saturdays(scl, "23:00", "24:00"), "2026-04-04 23:30 -04:00", false, "2026-04-05 00:00 -04:00"},
		{"scl april sunday deny opens when the clock first shows sunday, at -04", sundays(scl, "deny", "00:00", "01:00"), "2026-04-04 23:59 -04:00", true, "2026-04-05 00:00 -04:00"},
		{"scl april sunday deny inside", sundays(scl, "deny", "00:00", "01:00"), "2026-04-05 00:30 -04:00", false, "2026-04-05 01:00 -04:00"},
		{"scl september sunday allow in the gap is empty", sundays(scl, "allow", "00:15", "00:45"), "2026-09-06 01:20 -03:00", false, "2026-09-13 00:15 -03:00"},
		{"scl september sunday deny in the gap is empty", sundays(scl, "deny", "00:15", "00:45"), "2026-09-06 01:20 -03:00", true, "2026-09-06 01:21 -03:00"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := at(t, tc.now)
			d := decide(tc.w, now)
			if d.Allowed() != tc.allowed {
				t.Fatalf("at %s (%s): %s (%s), want allowed=%v", tc.now, now.In(tc.w.Location).Format("15:04 MST"), d.Permission, d.Reason, tc.allowed)
			}
			if !tc.allowed && d.Permission != promcp.PolicyDenied {
				t.Errorf("permission %s, want policy_denied", d.Permission)
			}
			if want := at(t, tc.until); !d.ValidUntil.Equal(want) {
				t.Errorf("until %s (%s), want %s", d.ValidUntil.In(tc.w.Location).Format("2006-01-02 15:04 MST"), d.ValidUntil.UTC(), tc.until)
			}
		})
	}
}

// TestDenyWindowCoversTheRepeatedHourEveryMinute walks the autumn change
// night minute by minute: a deny window 02:00–03:00 in Amsterdam must deny
// for exactly the two real hours whose wall clock shows 02:xx.
func TestDenyWindowCoversTheRepeatedHourEveryMinute(t *testing.T) {
	ams := zone(t, "Europe/Amsterdam")
	w := deny(ams, "02:00", "03:00")
	from, to := at(t, "2026-10-24 23:00 +00:00"), at(t, "2026-10-25 04:00 +00:00")
	denied := 0
	for now := from; now.Before(to); now = now.Add(time.Minute) {
		d := decide(w, now)
		inWall := now.In(ams).Hour() == 2
		if d.Allowed() == inWall {
			t.Fatalf("at %s: allowed=%v, want %v", now.In(ams).Format("15:04 MST"), d.Allowed(), !inWall)
		}
		if !d.Allowed() {
			denied++
		}
	}
	if denied != 120 {
		t.Errorf("denied %d minutes, want 120 (02:00–03:00 CEST and CET)", denied)
	}
}

// TestAllowWindowSkippedDayIsEmpty walks the spring change day: an allow
// window 02:30–02:45 in Amsterdam never opens that day (it does not move to
// 03:30–03:45), and opens for 15 minutes the day after.
func TestAllowWindowSkippedDayIsEmpty(t *testing.T) {
	ams := zone(t, "Europe/Amsterdam")
	w := allow(ams, "02:30", "02:45")
	open := map[string]int{}
	for now := at(t, "2026-03-28 23:00 +00:00"); now.Before(at(t, "2026-03-30 23:00 +00:00")); now = now.Add(time.Minute) {
		if decide(w, now).Allowed() {
			open[now.In(ams).Format("2006-01-02")]++
		}
	}
	if open["2026-03-29"] != 0 || open["2026-03-30"] != 15 {
		t.Errorf("open minutes per day %v, want none on 2026-03-29 and 15 on 2026-03-30", open)
	}
}

// TestRefusalNamesTheZoneOffset: the details say when the action is allowed
// again with the zone abbreviation in force then, so 03:00 CET is not
// mistaken for 03:00 CEST.
func TestRefusalNamesTheZoneOffset(t *testing.T) {
	ams := zone(t, "Europe/Amsterdam")
	d := decide(deny(ams, "02:00", "03:00"), at(t, "2026-10-25 02:30 +02:00"))
	if !strings.Contains(d.Details, "Sun 25 Oct 03:00 CET") {
		t.Errorf("details %q, want it to say Sun 25 Oct 03:00 CET", d.Details)
	}
}

// TestWindowAnswerHoldsUntilValidUntil checks, around every change of the
// four zones in 2026 and for windows with edges before, inside and after
// the changed hour, that an answer holds until its valid_until, and that a
// refusal clears exactly when it says.
func TestWindowAnswerHoldsUntilValidUntil(t *testing.T) {
	changes := map[string][]string{
		"Europe/Amsterdam": {"2026-03-29 01:00 +00:00", "2026-10-25 01:00 +00:00"},
		"America/New_York": {"2026-03-08 07:00 +00:00", "2026-11-01 06:00 +00:00"},
		"Australia/Sydney": {"2026-04-04 16:00 +00:00", "2026-10-03 16:00 +00:00"},
		"America/Santiago": {"2026-04-05 03:00 +00:00", "2026-09-06 04:00 +00:00"},
	}
	spans := [][2]string{{"00:00", "01:00"}, {"01:00", "02:00"}, {"01:30", "02:30"}, {"02:00", "03:00"}, {"02:30", "02:45"},
		{"02:30", "04:00"}, {"23:00", "24:00"}, {"23:30", "00:30"}, {"22:00", "06:00"}}
	for name, days := range changes {
		loc := zone(t, name)
		for _, change := range days {
			c := at(t, change)
			for _, sp := range spans {
				for _, w := range []*manifests.Windows{deny(loc, sp[0], sp[1]), allow(loc, sp[0], sp[1])} {
					for now := c.Add(-5 * time.Hour); now.Before(c.Add(5 * time.Hour)); now = now.Add(15 * time.Minute) {
						d := decide(w, now)
						end := d.ValidUntil
						if end.Sub(now) > 3*time.Hour {
							end = now.Add(3 * time.Hour)
						}
						for x := now; x.Before(end); x = x.Add(10 * time.Minute) {
							if decide(w, x).Allowed() != d.Allowed() {
								t.Fatalf("%s %+v at %s: allowed=%v until %s, but allowed=%v at %s", name, sp, now.In(loc).Format("01-02 15:04 MST"),
									d.Allowed(), d.ValidUntil.In(loc).Format("01-02 15:04 MST"), !d.Allowed(), x.In(loc).Format("01-02 15:04 MST"))
							}
						}
						if !d.Allowed() && !decide(w, d.ValidUntil).Allowed() {
							t.Fatalf("%s %+v at %s: refused until %s, but still refused then", name, sp, now.In(loc).Format("01-02 15:04 MST"),
								d.ValidUntil.In(loc).Format("01-02 15:04 MST"))
						}
					}
				}
			}
		}
	}
}

// BenchmarkWindows measures one evaluation with a night deny window and a
// weekday allow window in Europe/Amsterdam, on an ordinary day and on the
// autumn change night.
//
//	go test ./policy -run XXX -bench Windows
func BenchmarkWindows(b *testing.B) {
	w := &manifests.Windows{Location: zone(b, "Europe/Amsterdam"),
		Allow: []manifests.Window{{Days: []time.Weekday{1, 2, 3, 4, 5}, From: 6 * time.Hour, To: 20 * time.Hour}},
		Deny:  []manifests.Window{{Days: allDays, From: 22 * time.Hour, To: 6 * time.Hour}}}
	for _, at := range []struct{ name, t string }{{"ordinary", "2026-11-30T12:00:00+01:00"}, {"change-night", "2026-10-25T02:30:00+01:00"}} {
		now, _ := time.Parse(time.RFC3339, at.t)
		b.Run(at.name, func(b *testing.B) {
			for b.Loop() {
				decide(w, now)
			}
		})
	}
}
