package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/promcp/promcp-device/approval"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
)

// cmdApprove issues a one-time approval for one action, value and
// idempotency key on one gateway: the human's answer, given outside the
// agent's MCP session. The token names the gateway (the manifest's
// gateway:, or --gateway-id), so another gateway sharing the approval key
// refuses it. It refuses what the gateway would refuse anyway (a key file
// that does not exist, a tool the manifest does not serve, a value outside
// the tool's constraints), so that it never prints a token that cannot work.
func cmdApprove(c *cli) int {
	g := addGrantFlags(c, "to check the tool and the value", "approve", "who approves (`NAME`, recorded in the audit log with the action; default: your login name)")
	keyFile, manifest, tool := g.keyFile, g.manifest, g.tool
	value := c.String("value", "", "the `JSON` value to approve, such as 95 or true")
	key := c.String("key", "", "the idempotency `KEY` the agent will use")
	ttl := c.Duration("ttl", 0, "how long the approval stays usable (default: the policy's approval ttl for the tool, else 10m; never longer than it)")
	if !c.parse() {
		return 2
	}
	if *keyFile == "" || *manifest == "" || *tool == "" || *value == "" || *key == "" || c.NArg() > 0 {
		return c.usage("--approval-key, --manifest, --tool, --value and --key are required")
	}
	if *ttl < 0 {
		return c.usage("--ttl must be more than 0")
	}
	var v any
	if err := json.Unmarshal([]byte(*value), &v); err != nil {
		return c.usage("--value %q is not JSON (numbers as 95, booleans as true, strings as '\"auto\"')", *value)
	}
	until, name, err := approvable(*manifest, *tool, *value, v, *ttl)
	if err != nil {
		return exit(c.stderr, err)
	}
	s, name, err := g.signer(name)
	if err != nil {
		return c.fail(err)
	}
	who := approver(*g.by)
	now := time.Now()
	exp := now.Add(until)
	fmt.Fprintln(c.stdout, s.Issue(approval.Grant{Tool: *tool, Value: approval.Canonical(v), Key: *key, Expires: exp, By: who, Issued: now.UTC()}))
	fmt.Fprintf(c.stderr, "approval by %s for %s value=%s key=%q on gateway %s, usable once until %s\n", who, *tool, *value, *key, name, exp.Format(time.RFC3339))
	return 0
}

// approvable checks that the manifest at path has the do_* tool and would
// accept value v (raw as given), and returns how long the approval stays
// usable (ttl, else the policy's approval ttl for the tool, else 10
// minutes; never longer than the policy's) and the manifest's gateway name.
func approvable(path, tool, raw string, v any, ttl time.Duration) (time.Duration, string, error) {
	m, err := manifests.Load(path)
	if err != nil {
		return 0, "", &exitError{1, commandErr("approve", err).Error()}
	}
	var act *manifests.Capability
	var tools []string
	for i := range m.Capabilities {
		if c := &m.Capabilities[i]; c.Do != nil {
			tools = append(tools, c.Do.Tool)
			if c.Do.Tool == tool {
				act = c
			}
		}
	}
	if act == nil {
		return 0, "", &exitError{2, fmt.Sprintf("promcp-device approve: --tool %q is not a do_* tool of %s (want one of %v)", tool, path, tools)}
	}
	if why := policy.CheckValue(act.Type, act.Do.Constraints, act.Unit, v); why != "" {
		return 0, "", &exitError{2, fmt.Sprintf("promcp-device approve: --value %s for %s: %s; the gateway would refuse it", raw, tool, why)}
	}
	pc, err := resolvePolicy(path, "", m)
	if err != nil {
		return 0, "", &exitError{1, err.Error()}
	}
	var policyTTL time.Duration // the policy's approval ttl for the tool, if it sets one
	if pc.policy != nil {
		if a := pc.policy.Actions[tool]; a != nil && a.Approval != nil {
			policyTTL = a.Approval.TTL
		}
	}
	switch {
	case ttl == 0 && policyTTL > 0:
		ttl = policyTTL
	case ttl == 0:
		ttl = 10 * time.Minute
	case policyTTL > 0 && ttl > policyTTL:
		return 0, "", &exitError{2, fmt.Sprintf("promcp-device approve: --ttl %s is longer than the approval ttl %s that %s sets for %s", ttl, policyTTL, pc.file, tool)}
	}
	return ttl, m.Gateway, nil
}

// grantFlags are the flags approve and override share: the key that signs,
// the manifest that names the gateway and checks the tool, the tool, who
// grants it, and the gateway the token is bound to.
type grantFlags struct {
	keyFile, manifest, tool, by, gw *string
}

// addGrantFlags declares the shared flags on c; manifestUse says what the
// manifest is read for, verb what is granted ("approve"), byHelp the --by
// text.
func addGrantFlags(c *cli, manifestUse, verb, byHelp string) grantFlags {
	return grantFlags{
		keyFile:  c.String("approval-key", "", "the gateway's approval key `FILE` (the one given to serve --approval-key; never created here)"),
		manifest: c.String("manifest", "", "the gateway's manifest `FILE`, "+manifestUse),
		tool:     c.String("tool", "", "the do_* `TOOL` to "+verb),
		by:       c.String("by", "", byHelp),
		gw:       c.String("gateway-id", "", "the gateway `ID` the token is for, as serve --gateway-id gives it (default: the manifest's gateway: name)"),
	}
}

// signer loads the approval key and binds it to the gateway the token is
// for: --gateway-id, else name (the manifest's); it returns that gateway.
func (g grantFlags) signer(name string) (*approval.Signer, string, error) {
	s, err := loadSigner(*g.keyFile)
	if err != nil {
		return nil, "", err
	}
	if *g.gw != "" {
		name = *g.gw
	}
	return s.For(name), name, nil
}

// loadSigner signs with the key in file, which must exist.
func loadSigner(file string) (*approval.Signer, error) {
	k, err := approval.LoadKey(file)
	if err != nil {
		return nil, err
	}
	return approval.NewSigner(k)
}

// gatewayID is the gateway approval tokens are bound to: flag (serve
// --gateway-id), else the manifest's gateway name.
func gatewayID(flag string, m *manifests.Manifest) string {
	if flag != "" {
		return flag
	}
	return m.Gateway
}

// approver is who approves: by, else the login name.
func approver(by string) string {
	if by != "" {
		return by
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}
