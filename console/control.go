package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// set sets an actuator by hand: a POST of the console's own page (Origin
// and CSRF checked) by a signed-in person. The value is asked of can_do
// first, as the person; a refusal is shown with the policy's reason and
// nothing is called. Otherwise the do_* tool runs in process, as a call of
// that person (their name and role), through the same path as an agent's
// call: policy, idempotency, the one actuation path and the audit log.
func (c *Console) set(w http.ResponseWriter, r *http.Request) {
	v, ok := c.who(r)
	if !ok {
		http.Error(w, "log in first", http.StatusUnauthorized)
		return
	}
	if !c.checkPost(w, r, v) {
		return
	}
	if !v.LoggedIn {
		http.Error(w, "refused: without --console-users nobody acts from the console (it cannot tell a person from the agent)", http.StatusForbidden)
		return
	}
	tool, raw := r.PostFormValue("tool"), strings.TrimSpace(r.PostFormValue("value"))
	if !strings.HasPrefix(tool, "do_") || c.cfg.Server.MCP().GetTool(tool) == nil {
		http.Error(w, fmt.Sprintf("no actuator %q is served", tool), http.StatusBadRequest)
		return
	}
	value, err := parseValue(c.doCapability(tool), raw)
	if err != nil {
		c.flash(w, r, true, fmt.Sprintf("%s: %v", tool, err))
		return
	}
	ctx := server.WithCaller(r.Context(), v.Caller)
	unit := ""
	if cp := c.doCapability(tool); cp != nil {
		unit = cp.Unit
	}
	what := fmt.Sprintf("%s to %s", tool, withUnit(formatValue(value), unit))
	rep, err := c.canDo(ctx, tool, value)
	if err != nil {
		c.flash(w, r, true, fmt.Sprintf("%s: can_do: %v", what, err))
		return
	}
	// A value that needs a person's approval goes on: the call waits on the
	// desk, as the person's own request, for somebody else to approve.
	if len(rep.Candidates) == 0 || (rep.Candidates[0].Permission != promcp.Allowed && rep.Candidates[0].Permission != promcp.RequiresHumanApproval) {
		reason := "not allowed"
		if len(rep.Blocked) > 0 {
			reason = string(rep.Blocked[0].Permission) + ": " + rep.Blocked[0].Reason
		} else if len(rep.Candidates) > 0 {
			reason = string(rep.Candidates[0].Permission) + ": " + rep.Candidates[0].Reason
		}
		c.cfg.Log.Info("console: manual set refused by policy", "caller", v.Name, "role", v.Role, "tool", tool, "value", raw, "reason", reason)
		c.flash(w, r, true, fmt.Sprintf("%s refused by the policy (%s)", what, humanize(reason)))
		return
	}
	key := "console-" + v.Name + "-" + randomString()[:16]
	var res promcp.DoResult
	if err := c.call(ctx, tool, map[string]any{"value": value, "idempotency_key": key}, &res); err != nil {
		c.flash(w, r, true, fmt.Sprintf("%s: %v", what, err))
		return
	}
	c.cfg.Log.Info("console: manual set", "caller", v.Name, "role", v.Role, "tool", tool, "value", raw, "status", res.Status, "key", key)
	if res.Status != promcp.StatusSuccess {
		reason := res.Reason
		if reason == "" && res.Error != nil {
			reason = res.Error.Message
		}
		c.flash(w, r, true, fmt.Sprintf("%s: %s %s (%s)", what, res.Status, res.Permission, humanize(reason)))
		return
	}
	c.flash(w, r, false, fmt.Sprintf("%s: done by %s (applied %s)", what, v.Name, withUnit(formatValue(res.AppliedValue), unit)))
}

// flash sends the browser back to the console with a message.
func (c *Console) flash(w http.ResponseWriter, r *http.Request, bad bool, msg string) {
	q := url.Values{"done": {msg}}
	if bad {
		q.Set("bad", "1")
	}
	if bad && r.Header.Get("Accept") == "application/json" {
		http.Error(w, msg, http.StatusConflict)
		return
	}
	http.Redirect(w, r, Path+"?"+q.Encode(), http.StatusSeeOther)
}

// parseValue reads a value typed in the console as the capability's type.
func parseValue(cp *manifests.Capability, raw string) (any, error) {
	if raw == "" {
		return nil, fmt.Errorf("no value given")
	}
	typ := manifests.TypeNumber
	if cp != nil {
		typ = cp.Type
	}
	switch typ {
	case manifests.TypeBoolean:
		switch strings.ToLower(raw) {
		case "on", "true", "1":
			return true, nil
		case "off", "false", "0":
			return false, nil
		}
		return nil, fmt.Errorf("value %q: want on or off", raw)
	case manifests.TypeEnum:
		return raw, nil
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(raw, ",", "."), 64)
	if err != nil {
		return nil, fmt.Errorf("value %q is not a number", raw)
	}
	return f, nil
}

// withUnit writes a value with its unit.
func withUnit(v, unit string) string {
	if unit == "" || v == "—" || v == "" {
		return v
	}
	return v + " " + unit
}
