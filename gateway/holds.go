package gateway

import (
	"fmt"
	"sync"
	"time"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// holds are the actuators the running jobs hold: a job holds the
// actuators of its steps for its whole life, so that a second job or a
// do_* on them is refused with the holder's name, and its compensation
// restores what it found (nobody else moved them meanwhile). A move to the
// safe value is never refused by a hold (policy.TowardSafe: an operator's
// stop, a dead-man revert). Safe for concurrent use.
type holds struct {
	mu  sync.Mutex
	job map[string]string // by do_* tool: the job id holding it
	gen *stateGen         // counts every change (nil: not counted)
}

// changed counts a change of the holds; h.mu is held.
func (h *holds) changed() {
	if h.gen != nil {
		h.gen.n.Add(1)
	}
}

// take gives tools to job, all or none; it returns the tool already held
// by another job and that job, if any.
func (h *holds) take(job string, tools []string) (tool, holder string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.job == nil {
		h.job = map[string]string{}
	}
	for _, t := range tools {
		if j, ok := h.job[t]; ok && j != job {
			return t, j
		}
	}
	for _, t := range tools {
		h.job[t] = job
	}
	h.changed()
	return "", ""
}

// release frees what job holds.
func (h *holds) release(job string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for t, j := range h.job {
		if j == job {
			delete(h.job, t)
		}
	}
	h.changed()
}

// holder is the job holding tool, "" for none.
func (h *holds) holder(tool string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.job[tool]
}

// holdRefusal refuses an actuation of c with value by anyone but job (""
// for a do_* call) while another job holds c's actuator; a move to the
// safe value goes ahead.
func (g *Gateway) holdRefusal(c *capabilities.Capability, job string, value any, now time.Time) (policy.Decision, bool) {
	holder := g.holds.holder(c.Do.Tool)
	if holder == "" || holder == job || policy.TowardSafe(value, c.Do.SafeValue) {
		return policy.Decision{}, false
	}
	reason := fmt.Sprintf("%s is held by job %s until it ends: cancel it, or wait for it", c.Name, holder)
	d := policy.Decision{Permission: promcp.PolicyDenied, Reason: reason, ValidUntil: now.Add(policy.MaxStaticValidity)}
	if c.Do.SafeValue != nil {
		d.Details = fmt.Sprintf("moving to the safe value (%s value=%s) is allowed now", c.Do.Tool, server.FormatValue(c.Do.SafeValue))
	}
	return d, true
}
