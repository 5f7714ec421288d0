package gateway

import (
	"context"
	"fmt"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/policy"
)

// DryRun is what a do_* call would do now, decided as do_* decides but
// with nothing written and nothing reserved.
type DryRun struct {
	// Tool is the do_* tool asked about.
	Tool string
	// Decision is the policy's answer; its Value is the value that would
	// be written (the requested one, or the clamped one).
	Decision policy.Decision
	// Current is the actuator's reading now.
	Current capabilities.Reading
	// Binding is where the value would be written: the device, bus,
	// address, register and conversion of the actuator.
	Binding capabilities.Binding
}

// DryRun evaluates the policy for tool with value as do_* would at this
// moment (the caller's role from ctx, against the actuation history and
// the actions in progress) and says what would be written where. It
// writes nothing and reserves nothing; it reads the actuator and the
// readings its rules depend on.
func (g *Gateway) DryRun(ctx context.Context, tool string, value any) (DryRun, error) {
	for _, c := range g.set.All() {
		if c.Do == nil || c.Do.Tool != tool {
			continue
		}
		cur := c.Read(ctx)
		pr := g.request(ctx, c, value, true, cur)
		d := g.decide(ctx, c, value, pr, cur)
		return DryRun{Tool: tool, Decision: d, Current: cur, Binding: c.Binding}, nil
	}
	return DryRun{}, fmt.Errorf("no action %s in the manifest", tool)
}
