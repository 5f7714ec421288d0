package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/promcp/promcp-device/approval"
)

// cmdApprove issues a one-time approval for one action, value and
// idempotency key, for agents whose MCP client cannot ask a human itself.
func cmdApprove(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("approve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keyFile := fs.String("approval-key", "", "the gateway's approval key `FILE` (the one given to serve --approval-key)")
	tool := fs.String("tool", "", "the do_* `TOOL` to approve")
	value := fs.String("value", "", "the `JSON` value to approve, such as 95 or true")
	key := fs.String("key", "", "the idempotency `KEY` the agent will use")
	ttl := fs.Duration("ttl", 10*time.Minute, "how long the approval stays usable")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *keyFile == "" || *tool == "" || *value == "" || *key == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "promcp-device approve: --approval-key, --tool, --value and --key are required")
		return 2
	}
	var v any
	if err := json.Unmarshal([]byte(*value), &v); err != nil {
		fmt.Fprintf(stderr, "promcp-device approve: --value %q is not JSON (numbers as 95, booleans as true, strings as '\"auto\"')\n", *value)
		return 2
	}
	k, err := approval.LoadOrCreateKey(*keyFile)
	if err != nil {
		fmt.Fprintln(stderr, "promcp-device approve:", err)
		return 1
	}
	s, err := approval.NewSigner(k)
	if err != nil {
		fmt.Fprintln(stderr, "promcp-device approve:", err)
		return 1
	}
	exp := time.Now().Add(*ttl)
	fmt.Fprintln(stdout, s.Issue(approval.Grant{Tool: *tool, Value: approval.Canonical(v), Key: *key, Expires: exp}))
	fmt.Fprintf(stderr, "approval for %s value=%s key=%q, usable once until %s\n", *tool, *value, *key, exp.Format(time.RFC3339))
	return 0
}
