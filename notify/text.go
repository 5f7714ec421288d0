package notify

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/promcp/promcp-device/server"
)

// message is what people are told about r.
func (n *Notifier) message(event string, r server.Request) Message {
	now := n.cfg.Now()
	title, unit := r.Title, ""
	if n.cfg.Describe != nil {
		if t, u := n.cfg.Describe(r.Tool); t != "" || u != "" {
			if t != "" {
				title = t
			}
			unit = u
		}
	}
	if title == "" {
		title = r.Tool
	}
	what := fmt.Sprintf("%s to %s", title, ValueText(r.Value, unit))
	p := Pending{ID: r.ID, Tool: r.Tool, Title: title, Value: r.Value, Unit: unit, Caller: r.Caller.Name, Role: r.Caller.Role,
		Reason: r.Reason, SideEffects: r.SideEffects, Compensable: r.Compensable,
		Asked: r.Asked.UTC().Format(time.RFC3339), Expires: r.Expires.UTC().Format(time.RFC3339)}
	if p.SideEffects == nil {
		p.SideEffects = []string{}
	}
	if n.cfg.ConsoleURL != "" {
		p.URL = n.cfg.ConsoleURL + "/console/?" + url.Values{"request": {r.ID}}.Encode() + "#r-" + r.ID
	}
	m := Message{Event: event, Click: p.URL, Priority: 4, Tags: []string{"warning"}, Gateway: n.cfg.Gateway, Request: p,
		Sent: now.UTC().Format(time.RFC3339)}
	m.Title = "Approval needed: " + what
	if event == EventReminder {
		m.Title = fmt.Sprintf("Reminder: %s lapses in %s", what, Duration(r.Expires.Sub(now)))
		m.Priority = 5
	}
	m.Message = Text(r, what, now)
	return m
}

// Text is the request in a person's words: who asks for what, why it needs
// them, what it changes, and until when they can decide.
func Text(r server.Request, what string, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s) asks to set %s.\n", r.Caller.Name, r.Caller.Role, what)
	fmt.Fprintf(&b, "It needs you because %s.\n", Why(r.Tool, r.Reason))
	if len(r.SideEffects) > 0 {
		fmt.Fprintf(&b, "What will happen: %s.", strings.Join(r.SideEffects, "; "))
	} else {
		b.WriteString("What will happen: the actuator is set to that value.")
	}
	if !r.Compensable {
		b.WriteString(" It cannot be undone.")
	}
	fmt.Fprintf(&b, "\nApprove or deny it in the operator console before %s (in %s); after that it lapses.",
		Clock(r.Expires), Duration(r.Expires.Sub(now)))
	return b.String()
}

// Why turns the policy's reason for asking a person (written about the
// tool) into words for that person.
func Why(tool, reason string) string {
	// The policy's reason may carry, in parentheses, what the agent is to
	// do about it: that is not for the person.
	const needs = " needs a human's approval"
	if i := strings.Index(reason, needs); i >= 0 {
		reason = reason[:i+len(needs)]
	}
	for _, agentWords := range []string{" (a person who holds", " (a reading the action depends on", " (confirm through your MCP client"} {
		if i := strings.Index(reason, agentWords); i >= 0 {
			reason = reason[:i]
		}
	}
	rest := strings.TrimSpace(strings.TrimPrefix(reason, tool))
	switch {
	case strings.HasPrefix(rest, "with a value above "), strings.HasPrefix(rest, "with a value below "):
		limit := strings.TrimSuffix(strings.TrimPrefix(rest, "with a value "), " needs a human's approval")
		return "the value is " + limit + ", beyond what the policy lets it do without a person's approval"
	case strings.HasPrefix(rest, "always needs a human's approval"):
		return "the policy has a person approve every use of this action"
	case strings.HasPrefix(rest, "cannot be reversed"):
		return "it cannot be reversed, so the policy has a person approve it"
	case strings.HasPrefix(reason, "not plainly allowed: "):
		return "a reading it depends on is not good (" + strings.TrimPrefix(reason, "not plainly allowed: ") + "), so it should act only with a person's confirmation"
	case reason == "":
		return "the policy asks a person to approve it"
	}
	return "the policy says: " + reason
}

// ValueText is a value with its unit, for people: numbers plainly,
// booleans as on/off.
func ValueText(v any, unit string) string {
	var s string
	switch x := v.(type) {
	case nil:
		s = "—"
	case bool:
		s = map[bool]string{true: "on", false: "off"}[x]
	case float64:
		s = strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", x), "0"), ".")
	case string:
		s = x
	default:
		b, _ := json.Marshal(v)
		s = string(b)
	}
	if unit != "" && s != "—" {
		return s + " " + unit
	}
	return s
}

// Clock writes t as people read it: a 24-hour clock in the local time
// zone, with the zone ("17:49:41 UTC").
func Clock(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format("15:04:05 MST")
}

// Duration writes d for people, to the second, in at most two units
// ("4 min 41 s", "2 h 5 min", "12 s").
func Duration(d time.Duration) string {
	d = d.Round(time.Second)
	if d <= 0 {
		return "0 s"
	}
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h >= 24:
		return fmt.Sprintf("%d d %d h", h/24, h%24)
	case h > 0 && m > 0:
		return fmt.Sprintf("%d h %d min", h, m)
	case h > 0:
		return fmt.Sprintf("%d h", h)
	case m > 0 && s > 0:
		return fmt.Sprintf("%d min %d s", m, s)
	case m > 0:
		return fmt.Sprintf("%d min", m)
	}
	return fmt.Sprintf("%d s", s)
}
