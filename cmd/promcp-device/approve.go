package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"time"

	"github.com/promcp/promcp-device/approval"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
)

// cmdApprove issues a one-time approval for one action, value and
// idempotency key: the human's answer, given outside the agent's MCP
// session. It refuses what the gateway would refuse anyway (a key file
// that does not exist, a tool the manifest does not serve, a value outside
// the tool's constraints), so that it never prints a token that cannot work.
func cmdApprove(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("approve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keyFile := fs.String("approval-key", "", "the gateway's approval key `FILE` (the one given to serve --approval-key; never created here)")
	manifest := fs.String("manifest", "", "the gateway's manifest `FILE`, to check the tool and the value")
	tool := fs.String("tool", "", "the do_* `TOOL` to approve")
	value := fs.String("value", "", "the `JSON` value to approve, such as 95 or true")
	key := fs.String("key", "", "the idempotency `KEY` the agent will use")
	ttl := fs.Duration("ttl", 0, "how long the approval stays usable (default: the policy's approval ttl for the tool, else 10m; never longer than it)")
	by := fs.String("by", "", "who approves (`NAME`, recorded in the audit log with the action; default: your login name)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *keyFile == "" || *manifest == "" || *tool == "" || *value == "" || *key == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "promcp-device approve: --approval-key, --manifest, --tool, --value and --key are required")
		return 2
	}
	if *ttl < 0 {
		fmt.Fprintln(stderr, "promcp-device approve: --ttl must be more than 0")
		return 2
	}
	var v any
	if err := json.Unmarshal([]byte(*value), &v); err != nil {
		fmt.Fprintf(stderr, "promcp-device approve: --value %q is not JSON (numbers as 95, booleans as true, strings as '\"auto\"')\n", *value)
		return 2
	}
	m, err := manifests.Load(*manifest)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	var act *manifests.Capability
	var tools []string
	for i := range m.Capabilities {
		if c := &m.Capabilities[i]; c.Do != nil {
			tools = append(tools, c.Do.Tool)
			if c.Do.Tool == *tool {
				act = c
			}
		}
	}
	if act == nil {
		fmt.Fprintf(stderr, "promcp-device approve: --tool %q is not a do_* tool of %s (want one of %v)\n", *tool, *manifest, tools)
		return 2
	}
	if why := policy.CheckValue(act.Type, act.Do.Constraints, act.Unit, v); why != "" {
		fmt.Fprintf(stderr, "promcp-device approve: --value %s for %s: %s; the gateway would refuse it\n", *value, *tool, why)
		return 2
	}
	pc, err := resolvePolicy(*manifest, "", m)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	var policyTTL time.Duration // the policy's approval ttl for the tool, if it sets one
	if pc.policy != nil {
		if a := pc.policy.Actions[*tool]; a != nil && a.Approval != nil {
			policyTTL = a.Approval.TTL
		}
	}
	switch {
	case *ttl == 0 && policyTTL > 0:
		*ttl = policyTTL
	case *ttl == 0:
		*ttl = 10 * time.Minute
	case policyTTL > 0 && *ttl > policyTTL:
		fmt.Fprintf(stderr, "promcp-device approve: --ttl %s is longer than the approval ttl %s that %s sets for %s\n", *ttl, policyTTL, pc.file, *tool)
		return 2
	}
	k, err := approval.LoadKey(*keyFile)
	if err != nil {
		fmt.Fprintln(stderr, "promcp-device approve:", err)
		return 1
	}
	s, err := approval.NewSigner(k)
	if err != nil {
		fmt.Fprintln(stderr, "promcp-device approve:", err)
		return 1
	}
	who := *by
	if who == "" {
		if u, err := user.Current(); err == nil {
			who = u.Username
		} else {
			who = os.Getenv("USER")
		}
	}
	now := time.Now()
	exp := now.Add(*ttl)
	fmt.Fprintln(stdout, s.Issue(approval.Grant{Tool: *tool, Value: approval.Canonical(v), Key: *key, Expires: exp, By: who, Issued: now.UTC()}))
	fmt.Fprintf(stderr, "approval by %s for %s value=%s key=%q, usable once until %s\n", who, *tool, *value, *key, exp.Format(time.RFC3339))
	return 0
}
