package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/promcp/promcp-device/approval"
	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/notify"
	"github.com/promcp/promcp-device/server"
)

// auditTail is how much of the end of the audit log the console reads, and
// auditRows how many matching records it shows (newest first).
const (
	auditTail = 512 << 10
	auditRows = 100
)

// Outcomes the audit filter offers: a record matches when its event,
// status or permission is the one chosen.
var outcomes = []string{"success", "partial", "failed", "refused", "replayed", "requires_human_approval", "attempt", "recovered"}

type auditFilter struct {
	Tool, Caller, Outcome string
}

func filterOf(q url.Values) auditFilter {
	return auditFilter{Tool: strings.TrimSpace(q.Get("tool")), Caller: strings.TrimSpace(q.Get("caller")), Outcome: q.Get("outcome")}
}

func (f auditFilter) match(r audit.Record) bool {
	return (f.Tool == "" || r.Tool == f.Tool) && (f.Caller == "" || r.Caller == f.Caller) &&
		(f.Outcome == "" || r.Event == f.Outcome || r.Status == f.Outcome || r.Permission == f.Outcome)
}

// Query is the filter as a URL query, for the page's script.
func (f auditFilter) Query() string {
	q := url.Values{}
	for k, v := range map[string]string{"tool": f.Tool, "caller": f.Caller, "outcome": f.Outcome} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q.Encode()
}

type auditRow struct {
	audit.Record
	Approved string
	Err      string // set on the first row when the log cannot be read
}

// audit returns the newest records of the audit log that match f.
func (c *Console) audit(f auditFilter) []auditRow {
	if c.cfg.AuditFile == "" {
		return nil
	}
	lines, err := tail(c.cfg.AuditFile, auditTail)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // nothing audited yet
		}
		return []auditRow{{Err: err.Error()}}
	}
	var out []auditRow
	for i := len(lines) - 1; i >= 0 && len(out) < auditRows; i-- {
		var r audit.Record
		if json.Unmarshal(lines[i], &r) != nil || r.Event == "" || !f.match(r) {
			continue // a checkpoint or summary line, or another record
		}
		row := auditRow{Record: r}
		if r.Approval != nil {
			row.Approved = approvedText(*r.Approval)
		}
		out = append(out, row)
	}
	return out
}

// approvedText says who approved an audited call, and how; the record's
// caller is who made the call (and so used the approval).
func approvedText(a audit.Approval) string {
	switch {
	case a.Method == approval.ViaElicitation && strings.HasPrefix(a.By, "("):
		return a.By + " (elicitation)" // no caller name: "(the caller's MCP client)"
	case a.Method == approval.ViaElicitation:
		return a.By + "'s MCP client (elicitation)"
	case strings.HasPrefix(a.ID, server.DeskGrantPrefix):
		return a.By + " in the console"
	case a.Method == approval.ViaOutOfBand:
		return a.By + " (approve token)"
	}
	return a.By + " (" + a.Method + ")"
}

// tail returns the whole lines in the last n bytes of the file.
func tail(path string, n int64) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(fi.Size()-n, 0)
	b := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	if off > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:] // a partial first line
		}
	}
	return bytes.Split(bytes.TrimSpace(b), []byte("\n")), nil
}

// rules describes the policy of a do_* tool in one line.
func (c *Console) rules(tool string) string {
	if c.cfg.Policy == nil {
		return "no policy"
	}
	a := c.cfg.Policy.Actions[tool]
	if a == nil {
		return "no rule beyond the manifest's constraints"
	}
	var p []string
	if len(a.Roles) > 0 {
		p = append(p, "roles "+strings.Join(a.Roles, ", "))
	}
	if a.Cooldown > 0 {
		p = append(p, "cooldown "+notify.Duration(a.Cooldown))
	}
	if a.RateLimit != nil {
		p = append(p, fmt.Sprintf("at most %d per %s", a.RateLimit.Max, notify.Duration(a.RateLimit.Per)))
	}
	if w := a.Windows; w != nil {
		p = append(p, windowsText(w))
	}
	for _, il := range a.Interlocks {
		p = append(p, "interlock on "+il.Read+": "+il.Reason)
	}
	if ap := a.Approval; ap != nil {
		unit := ""
		if cp := c.doCapability(tool); cp != nil {
			unit = cp.Unit
		}
		p = append(p, approvalText(ap, unit))
	}
	if len(p) == 0 {
		return "no rule beyond the manifest's constraints"
	}
	return strings.Join(p, " · ")
}

func windowsText(w *manifests.Windows) string {
	hm := func(d time.Duration) string { return fmt.Sprintf("%02d:%02d", int(d.Hours()), int(d.Minutes())%60) }
	var s []string
	for _, x := range w.Allow {
		s = append(s, "allowed "+hm(x.From)+"–"+hm(x.To))
	}
	for _, x := range w.Deny {
		s = append(s, "denied "+hm(x.From)+"–"+hm(x.To))
	}
	loc := ""
	if w.Location != nil {
		loc = " (" + w.Location.String() + ")"
	}
	return "window " + strings.Join(s, ", ") + loc
}

func approvalText(a *manifests.Approval, unit string) string {
	var s []string
	if a.Always {
		s = append(s, "always")
	}
	if a.Above != nil {
		s = append(s, "above "+withUnit(formatValue(*a.Above), unit))
	}
	if a.Below != nil {
		s = append(s, "below "+withUnit(formatValue(*a.Below), unit))
	}
	if a.NotCompensable {
		s = append(s, "when not compensable")
	}
	return "a person approves " + strings.Join(s, ", ")
}

var funcs = template.FuncMap{
	"clock": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return clock(t)
	},
	"ago": func(t, now time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return remaining(now, t) + " ago"
	},
	"outcomes": func() []string { return slices.Clone(outcomes) },
	"join":     strings.Join,
}
