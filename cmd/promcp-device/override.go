package main

import (
	"fmt"
	"time"

	"github.com/promcp/promcp-device/approval"
	"github.com/promcp/promcp-device/manifests"
)

// cmdOverride issues an emergency override of one do_* tool on one gateway
// (PhysMCP §6 emergency): a token signed with the gateway's approval key,
// bound to the gateway and the tool, that lapses after the policy's
// emergency ttl (or --ttl, never longer). The caller passes it as the
// approval argument of do_*; the gateway honours it only from a caller
// whose role the policy's emergency admits, only with an audit log, and
// it lifts time windows, cooldown, rate limit and approval, never the
// role, the range, an interlock or quorum (see docs/policy.md,
// Emergency overrides). It refuses what the gateway would refuse anyway: a policy
// without an emergency block, a tool the manifest does not serve.
func cmdOverride(c *cli) int {
	g := addGrantFlags(c, "whose policy declares the emergency block", "override", "who overrides (`NAME`, recorded in the audit log with each action; default: your login name)")
	keyFile, manifest, tool := g.keyFile, g.manifest, g.tool
	ttl := c.Duration("ttl", 0, "how long the override lasts (default and most: the policy's emergency ttl)")
	if !c.parse() {
		return 2
	}
	if *keyFile == "" || *manifest == "" || *tool == "" || c.NArg() > 0 {
		return c.usage("--approval-key, --manifest and --tool are required")
	}
	if *ttl < 0 {
		return c.usage("--ttl must be more than 0")
	}
	em, name, err := overridable(*manifest, *tool)
	if err != nil {
		return exit(c.stderr, err)
	}
	switch {
	case *ttl == 0:
		*ttl = em.TTL
	case *ttl > em.TTL:
		return c.usage("--ttl %s is longer than the emergency ttl %s that %s sets", manifests.FormatDuration(*ttl), manifests.FormatDuration(em.TTL), em.Pos)
	}
	s, name, err := g.signer(name)
	if err != nil {
		return c.fail(err)
	}
	who := approver(*g.by)
	now := time.Now().Truncate(time.Second)
	exp := now.Add(*ttl)
	fmt.Fprintln(c.stdout, s.Issue(approval.Grant{Tool: *tool, Override: true, Expires: exp, By: who, Issued: now.UTC()}))
	fmt.Fprintf(c.stderr, "emergency override by %s of %s on gateway %s, until %s: pass it as approval to %s, from a caller with role %v; every action under it is audited\n",
		who, *tool, name, exp.Format(time.RFC3339), *tool, em.Roles)
	return 0
}

// overridable checks that the manifest at path serves the do_* tool and
// that its policy declares an emergency block, which it returns with the
// manifest's gateway name.
func overridable(path, tool string) (*manifests.Emergency, string, error) {
	m, err := manifests.Load(path)
	if err != nil {
		return nil, "", &exitError{1, commandErr("override", err).Error()}
	}
	var tools []string
	found := false
	for _, c := range m.Capabilities {
		if c.Do != nil {
			tools = append(tools, c.Do.Tool)
			found = found || c.Do.Tool == tool
		}
	}
	if !found {
		return nil, "", &exitError{2, fmt.Sprintf("promcp-device override: --tool %q is not a do_* tool of %s (want one of %v)", tool, path, tools)}
	}
	pc, err := resolvePolicy(path, "", m)
	if err != nil {
		return nil, "", &exitError{1, err.Error()}
	}
	if pc.policy == nil || pc.policy.Emergency == nil {
		return nil, "", &exitError{1, fmt.Sprintf("promcp-device override: the policy of %s declares no emergency block, so the gateway accepts no override (see docs/policy.md, Emergency overrides)", path)}
	}
	return pc.policy.Emergency, m.Gateway, nil
}
