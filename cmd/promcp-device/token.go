package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/promcp/promcp-device/server"
)

const tokenUsage = `Usage:
  promcp-device token add --tokens FILE --name NAME --role ROLE   make a token, append its hash to FILE, print the token once
  promcp-device token hash --name NAME --role ROLE < TOKEN         print the tokens-file line for a token read from stdin
Roles: viewer (read_* and can_do), operator, supervisor, admin (also do_*).
`

func cmdToken(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "add" && args[0] != "hash") {
		fmt.Fprint(stderr, tokenUsage)
		return 2
	}
	fs := flag.NewFlagSet("token "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("tokens", "", "add: the tokens `FILE` to append to (created 0600 if needed)")
	name := fs.String("name", "", "who the token identifies (`NAME`, recorded in the audit log)")
	role := fs.String("role", server.RoleOperator, "the token's `ROLE`")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *name == "" || fs.NArg() > 0 || (args[0] == "add" && *file == "") {
		fmt.Fprint(stderr, tokenUsage)
		return 2
	}
	if args[0] == "hash" {
		tok, err := bufio.NewReader(stdin).ReadString('\n')
		tok = strings.TrimSpace(tok)
		if tok == "" {
			fmt.Fprintln(stderr, "promcp-device token hash: no token on stdin", err)
			return 2
		}
		line := server.TokenLine(*name, *role, tok)
		if _, err := server.ParseTokens("line", strings.NewReader(line)); err != nil {
			fmt.Fprintln(stderr, "promcp-device token hash:", err)
			return 2
		}
		fmt.Fprintln(stdout, line)
		return 0
	}
	tok := server.NewToken()
	line := server.TokenLine(*name, *role, tok)
	if _, err := server.ParseTokens("line", strings.NewReader(line)); err != nil {
		fmt.Fprintln(stderr, "promcp-device token add:", err)
		return 2
	}
	if _, err := os.Stat(*file); err == nil {
		if _, err := server.LoadTokens(*file); err != nil { // never append to a file serve would refuse
			fmt.Fprintln(stderr, "promcp-device token add:", err)
			return 1
		}
	}
	f, err := os.OpenFile(*file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(stderr, "promcp-device token add:", err)
		return 1
	}
	_, werr := fmt.Fprintln(f, line)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		fmt.Fprintln(stderr, "promcp-device token add:", werr)
		return 1
	}
	fmt.Fprintf(stderr, "added %s (%s) to %s; the token is shown once, keep it secret:\n", *name, *role, *file)
	fmt.Fprintln(stdout, tok)
	return 0
}
