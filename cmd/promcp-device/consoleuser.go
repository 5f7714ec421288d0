//go:build !noconsole

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/term"

	"github.com/promcp/promcp-device/console"
)

const consoleUserUsage = `Usage:
  promcp-device console-user add NAME --file FILE [--role ROLE] [--manifest FILE] [--cost N]
        add the operator console account NAME, or set its password (and role);
        the password is asked on the terminal (twice, not echoed) or, when stdin
        is not a terminal, read from its first line; never from the command line
  promcp-device console-user remove NAME --file FILE
        remove the account; a running gateway ends its console sessions
  promcp-device console-user list --file FILE
        list the accounts' names and roles (never a password or hash)
The file (mode 0600) is given to serve --console-users. Accounts are for people:
they sign in to the console and, with a role of --console-approvers (default
supervisor, admin), approve. MCP tokens (promcp-device token) never sign in.
`

// consoleUserCmd is one console-user subcommand with its flags.
type consoleUserCmd struct {
	sub, name, file, role, manifest string
	cost                            int
	stdin                           io.Reader
	stdout, stderr                  io.Writer
}

func cmdConsoleUser(cl *cli) int {
	if len(cl.args) == 0 || !slices.Contains([]string{"add", "remove", "list"}, cl.args[0]) {
		fmt.Fprint(cl.stderr, consoleUserUsage)
		return 2
	}
	c := &consoleUserCmd{sub: cl.args[0], stdin: cl.stdin, stdout: cl.stdout, stderr: cl.stderr}
	fs := cl.sub()
	if len(fs.args) > 0 && !strings.HasPrefix(fs.args[0], "-") { // add NAME --flags
		c.name, fs.args = fs.args[0], fs.args[1:]
	}
	fs.StringVar(&c.file, "file", "", "the console users `FILE` (add: created 0600 if needed)")
	fs.StringVar(&c.role, "role", "", "add: the account's `ROLE` (required for a new account; an existing one keeps its role without it)")
	fs.StringVar(&c.manifest, "manifest", "", "add: check the role against the roles of this manifest's policy (`FILE`)")
	fs.IntVar(&c.cost, "cost", console.DefaultCost, fmt.Sprintf("add: the bcrypt cost (`N`, %d to %d): each step doubles the time a check takes, for the gateway and for a guesser", console.MinCost, console.MaxCost))
	if !fs.parse() {
		return 2
	}
	if c.name == "" && fs.NArg() == 1 { // add --flags NAME
		c.name = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return c.usage("unexpected argument %q", fs.Arg(0))
	}
	if c.file == "" || (c.sub != "list") != (c.name != "") {
		fmt.Fprint(c.stderr, consoleUserUsage)
		return 2
	}
	switch c.sub {
	case "list":
		return c.list()
	case "remove":
		return c.remove()
	}
	return c.add()
}

func (c *consoleUserCmd) usage(format string, a ...any) int {
	fmt.Fprintf(c.stderr, "promcp-device console-user %s: %s\n", c.sub, fmt.Sprintf(format, a...))
	return 2
}

func (c *consoleUserCmd) fail(err error) int {
	fmt.Fprintf(c.stderr, "promcp-device console-user %s: %v\n", c.sub, err)
	return 1
}

// add sets the account's password (and role) in the file.
func (c *consoleUserCmd) add() int {
	role, code := c.roleOf()
	if code != 0 {
		return code
	}
	if c.cost < console.MinCost || c.cost > console.MaxCost {
		return c.usage("--cost %d: want %d to %d (default %d)", c.cost, console.MinCost, console.MaxCost, console.DefaultCost)
	}
	password, err := c.password()
	if err != nil {
		return c.fail(err)
	}
	hash, err := console.HashPassword(password, c.cost)
	if err != nil {
		return c.usage("%v", err)
	}
	added, err := console.SetUser(c.file, c.name, role, hash)
	if err != nil {
		return c.fail(err)
	}
	if added {
		fmt.Fprintf(c.stderr, "added %s (%s) to %s\n", c.name, role, c.file)
	} else {
		fmt.Fprintf(c.stderr, "set the password and role (%s) of %s in %s; a running gateway ends %s's console sessions\n", role, c.name, c.file, c.name)
	}
	return 0
}

// roleOf is the role the account gets: --role, checked against the roles
// known (of --manifest's policy, or the default ones), else the role it
// has in the file; a new account needs --role.
func (c *consoleUserCmd) roleOf() (string, int) {
	if c.role == "" {
		if _, err := os.Stat(c.file); err == nil {
			u, err := console.LoadUsers(c.file)
			if err != nil {
				return "", c.fail(err)
			}
			for _, e := range u.List() {
				if e.Name == c.name {
					return e.Role, 0
				}
			}
		}
		return "", c.usage("%s is a new account: give its --role (such as supervisor, who approves, or viewer)", c.name)
	}
	known, from, err := knownRoles(c.manifest)
	if err != nil {
		return "", c.fail(err)
	}
	if !slices.Contains(known, c.role) {
		return "", c.usage("--role %q is not a role %s (want %s)", c.role, from, strings.Join(known, ", "))
	}
	return c.role, 0
}

// password asks for the password twice on a terminal, without echo, or
// reads the first line of stdin when it is not a terminal.
func (c *consoleUserCmd) password() (string, error) {
	if f, ok := c.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(c.stderr, "Password for %s: ", c.name)
		p1, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(c.stderr)
		if err != nil {
			return "", fmt.Errorf("reading the password: %w", err)
		}
		fmt.Fprintf(c.stderr, "Again: ")
		p2, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(c.stderr)
		if err != nil {
			return "", fmt.Errorf("reading the password: %w", err)
		}
		if !bytes.Equal(p1, p2) {
			return "", errors.New("the two passwords differ; nothing was changed")
		}
		return string(p1), nil
	}
	line, err := bufio.NewReader(c.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("reading the password from stdin: %w", err)
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if line == "" {
		return "", errors.New("no password on stdin (give it as the first line; never on the command line)")
	}
	return line, nil
}

// remove removes the account from the file.
func (c *consoleUserCmd) remove() int {
	ok, err := console.RemoveUser(c.file, c.name)
	if err != nil {
		return c.fail(err)
	}
	if !ok {
		return c.fail(fmt.Errorf("no account %q in %s (see promcp-device console-user list --file %s)", c.name, c.file, c.file))
	}
	fmt.Fprintf(c.stderr, "removed %s from %s; a running gateway ends its console sessions\n", c.name, c.file)
	return 0
}

// list prints the accounts, by name and role.
func (c *consoleUserCmd) list() int {
	u, err := console.LoadUsers(c.file)
	if err != nil {
		return c.fail(err)
	}
	for _, e := range u.List() {
		fmt.Fprintf(c.stdout, "%-20s %-12s bcrypt cost %d\n", e.Name, e.Role, e.Cost)
	}
	fmt.Fprintf(c.stderr, "%d accounts in %s\n", u.Len(), c.file)
	return 0
}
