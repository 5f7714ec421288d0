package main

import (
	"bufio"
	"flag"
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

func cmdToken(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || !slices.Contains([]string{"add", "hash", "list", "revoke"}, args[0]) {
		fmt.Fprint(stderr, tokenUsage)
		return 2
	}
	sub := args[0]
	fs := flag.NewFlagSet("token "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("tokens", "", "the tokens `FILE` (add: created 0600 if needed)")
	name := fs.String("name", "", "who the token identifies (`NAME`, recorded in the audit log)")
	role := fs.String("role", server.RoleOperator, "add, hash: the token's `ROLE`")
	manifest := fs.String("manifest", "", "add, hash: check the role against the roles of this manifest's policy (`FILE`)")
	hashPrefix := fs.String("hash", "", "revoke: only the token whose hash starts with `PREFIX` (as token list shows it)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	needFile := sub != "hash"
	needName := sub != "list"
	if fs.NArg() > 0 || (needFile && *file == "") || (needName && *name == "") {
		fmt.Fprint(stderr, tokenUsage)
		return 2
	}
	fail := func(code int, err any) int {
		fmt.Fprintf(stderr, "promcp-device token %s: %v\n", sub, err)
		return code
	}
	switch sub {
	case "list":
		t, err := server.LoadTokens(*file)
		if err != nil {
			return fail(1, err)
		}
		for _, e := range t.List() {
			fmt.Fprintf(stdout, "%-20s %-12s %s\n", e.Name, e.Role, e.HashPrefix)
		}
		fmt.Fprintf(stderr, "%d tokens in %s\n", t.Len(), *file)
		return 0
	case "revoke":
		n, err := server.RevokeTokens(*file, *name, *hashPrefix)
		if err != nil {
			return fail(1, err)
		}
		if n == 0 {
			return fail(1, fmt.Sprintf("no token of %q%s in %s (see promcp-device token list --tokens %s)", *name, hashText(*hashPrefix), *file, *file))
		}
		fmt.Fprintf(stderr, "revoked %d token(s) of %s in %s\n", n, *name, *file)
		return 0
	}
	known, from, err := knownRoles(*manifest)
	if err != nil {
		return fail(1, err)
	}
	if !slices.Contains(known, *role) {
		return fail(2, fmt.Sprintf("--role %q is not a role %s (want %s)", *role, from, strings.Join(known, ", ")))
	}
	if sub == "hash" {
		tok, err := bufio.NewReader(stdin).ReadString('\n')
		tok = strings.TrimSpace(tok)
		if tok == "" {
			return fail(2, fmt.Sprint("no token on stdin ", err))
		}
		line := server.TokenLine(*name, *role, tok)
		if _, err := server.ParseTokens("line", strings.NewReader(line)); err != nil {
			return fail(2, err)
		}
		fmt.Fprintln(stdout, line)
		return 0
	}
	tok := server.NewToken()
	line := server.TokenLine(*name, *role, tok)
	if _, err := server.ParseTokens("line", strings.NewReader(line)); err != nil {
		return fail(2, err)
	}
	if _, err := os.Stat(*file); err == nil {
		if _, err := server.LoadTokens(*file); err != nil { // never append to a file serve would refuse
			return fail(1, err)
		}
	}
	f, err := os.OpenFile(*file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fail(1, err)
	}
	_, werr := fmt.Fprintln(f, line)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fail(1, werr)
	}
	fmt.Fprintf(stderr, "added %s (%s) to %s; the token is shown once, keep it secret:\n", *name, *role, *file)
	fmt.Fprintln(stdout, tok)
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
