package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/server"
)

const tokenUsage = `Usage:
  promcp-device token add --tokens FILE --name NAME --role ROLE [--manifest FILE]
        make a token, append its hash to FILE, print the token once
  promcp-device token hash --name NAME --role ROLE [--manifest FILE] < TOKEN
        print the tokens-file line for a token read from stdin
  promcp-device token list --tokens FILE
        list the tokens' names, roles and hash prefixes (never the tokens)
  promcp-device token revoke --tokens FILE --name NAME [--hash PREFIX]
        remove NAME's tokens (or the one whose hash starts with PREFIX); a running
        gateway stops accepting them at their next use
Roles: viewer (read_* and can_do), operator, supervisor, admin (also do_*), and
the roles the manifest's policy declares (give --manifest). Any other role is refused.
`

// tokenCmd is one token subcommand with its flags.
type tokenCmd struct {
	sub, file, name, role, manifest, hashPrefix string
	stdout, stderr                              io.Writer
}

func cmdToken(cl *cli) int {
	if len(cl.args) == 0 || !slices.Contains([]string{"add", "hash", "list", "revoke"}, cl.args[0]) {
		fmt.Fprint(cl.stderr, tokenUsage)
		return 2
	}
	c := &tokenCmd{sub: cl.args[0], stdout: cl.stdout, stderr: cl.stderr}
	fs := cl.sub()
	fs.StringVar(&c.file, "tokens", "", "the tokens `FILE` (add: created 0600 if needed)")
	fs.StringVar(&c.name, "name", "", "who the token identifies (`NAME`, recorded in the audit log)")
	fs.StringVar(&c.role, "role", server.RoleOperator, "add, hash: the token's `ROLE`")
	fs.StringVar(&c.manifest, "manifest", "", "add, hash: check the role against the roles of this manifest's policy (`FILE`)")
	fs.StringVar(&c.hashPrefix, "hash", "", "revoke: only the token whose hash starts with `PREFIX` (as token list shows it)")
	if !fs.parse() {
		return 2
	}
	needFile := c.sub != "hash"
	needName := c.sub != "list"
	if fs.NArg() > 0 || (needFile && c.file == "") || (needName && c.name == "") {
		fmt.Fprint(c.stderr, tokenUsage)
		return 2
	}
	switch c.sub {
	case "list":
		return c.list()
	case "revoke":
		return c.revoke()
	}
	known, from, err := knownRoles(c.manifest)
	if err != nil {
		return c.fail(1, err)
	}
	if !slices.Contains(known, c.role) {
		return c.fail(2, fmt.Sprintf("--role %q is not a role %s (want %s)", c.role, from, strings.Join(known, ", ")))
	}
	if c.sub == "hash" {
		return c.hash(cl.stdin)
	}
	return c.add()
}

func (c *tokenCmd) fail(code int, err any) int {
	fmt.Fprintf(c.stderr, "promcp-device token %s: %v\n", c.sub, err)
	return code
}

// list prints the tokens of the file, by name, role and hash prefix.
func (c *tokenCmd) list() int {
	t, err := server.LoadTokens(c.file)
	if err != nil {
		return c.fail(1, err)
	}
	for _, e := range t.List() {
		fmt.Fprintf(c.stdout, "%-20s %-12s %s\n", e.Name, e.Role, e.HashPrefix)
	}
	fmt.Fprintf(c.stderr, "%d tokens in %s\n", t.Len(), c.file)
	return 0
}

// revoke removes the tokens of a name (or the one of a hash prefix).
func (c *tokenCmd) revoke() int {
	n, err := server.RevokeTokens(c.file, c.name, c.hashPrefix)
	if err != nil {
		return c.fail(1, err)
	}
	if n == 0 {
		return c.fail(1, fmt.Sprintf("no token of %q%s in %s (see promcp-device token list --tokens %s)", c.name, hashText(c.hashPrefix), c.file, c.file))
	}
	fmt.Fprintf(c.stderr, "revoked %d token(s) of %s in %s\n", n, c.name, c.file)
	return 0
}

// hash prints the tokens-file line of the token read from stdin.
func (c *tokenCmd) hash(stdin io.Reader) int {
	tok, err := bufio.NewReader(stdin).ReadString('\n')
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return c.fail(2, fmt.Sprint("no token on stdin ", err))
	}
	line := server.TokenLine(c.name, c.role, tok)
	if _, err := server.ParseTokens("line", strings.NewReader(line)); err != nil {
		return c.fail(2, err)
	}
	fmt.Fprintln(c.stdout, line)
	return 0
}

// add appends a new token's line to the file and prints the token, once.
func (c *tokenCmd) add() int {
	tok := server.NewToken()
	line := server.TokenLine(c.name, c.role, tok)
	if _, err := server.ParseTokens("line", strings.NewReader(line)); err != nil {
		return c.fail(2, err)
	}
	if _, err := os.Stat(c.file); err == nil {
		if _, err := server.LoadTokens(c.file); err != nil { // never append to a file serve would refuse
			return c.fail(1, err)
		}
	}
	f, err := os.OpenFile(c.file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return c.fail(1, err)
	}
	_, werr := fmt.Fprintln(f, line)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return c.fail(1, werr)
	}
	fmt.Fprintf(c.stderr, "added %s (%s) to %s; the token is shown once, keep it secret:\n", c.name, c.role, c.file)
	fmt.Fprintln(c.stdout, tok)
	return 0
}

func hashText(prefix string) string {
	if prefix == "" {
		return ""
	}
	return " with a hash starting " + prefix
}

// knownRoles returns the roles a token may hold: those of the manifest's
// policy when a manifest is given and has one, else the built-in four;
// from says which.
func knownRoles(manifest string) ([]string, string, error) {
	if manifest == "" {
		return manifests.DefaultRoleNames, "this gateway knows without a policy (give --manifest for a policy's roles)", nil
	}
	m, err := manifests.Load(manifest)
	if err != nil {
		return nil, "", err
	}
	pc, err := resolvePolicy(manifest, "", m)
	if err != nil {
		return nil, "", err
	}
	if pc.policy == nil {
		return manifests.DefaultRoleNames, "known to " + manifest + " (it has no policy)", nil
	}
	return pc.policy.Roles, "declared in " + pc.file, nil
}
