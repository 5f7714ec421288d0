package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/promcp/promcp-device/lint"
	"github.com/promcp/promcp-device/manifests"
)

// lintFlags are the flags of `lint` for tool lists and live servers.
type lintFlags struct {
	url       string
	headers   headerFlags
	manifest  string
	group     string
	asJSON    bool
	strict    bool
	callReads bool
	command   []string // after "--"
}

type headerFlags map[string]string

func (h headerFlags) String() string { return fmt.Sprint(map[string]string(h)) }

func (h headerFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, ":")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("header %q: want NAME:VALUE", s)
	}
	h[strings.TrimSpace(k)] = strings.TrimSpace(v)
	return nil
}

// addLintFlags declares the surface flags on c and splits off the server
// command that follows "--" in its arguments, leaving those to parse.
func addLintFlags(c *cli) *lintFlags {
	lf := &lintFlags{headers: headerFlags{}}
	if i := slices.Index(c.args, "--"); i >= 0 {
		lf.command = c.args[i+1:]
		c.args = c.args[:i]
	}
	fs := c.FlagSet
	fs.StringVar(&lf.url, "url", "", "lint the live server at `URL` (streamable HTTP, such as http://127.0.0.1:8080/mcp)")
	fs.Var(lf.headers, "header", "HTTP header `NAME:VALUE` sent with --url (repeatable), such as \"Authorization: Bearer TOKEN\"")
	fs.StringVar(&lf.manifest, "manifest", "", "also check the served tools against the manifest `FILE` (drift: X001, X002)")
	fs.StringVar(&lf.group, "group", "", "with --manifest: the server is the endpoint of the tool group `NAME` (/mcp/NAME): check its tools against that group")
	fs.BoolVar(&lf.asJSON, "json", false, "print the findings as JSON")
	fs.BoolVar(&lf.strict, "strict", false, "warnings fail too")
	fs.BoolVar(&lf.callReads, "call-reads", false, "call every read_* and can_do (never a do_*) and check the answers")
	return lf
}

// surface reports whether this lint is of a tool surface (a tool-list JSON
// file or a live server) rather than of manifests and scenarios.
func (lf *lintFlags) surface(files []string) bool {
	// --strict alone does not say: with manifests, policies, fleet files,
	// scenarios or site tests it makes their warnings fail.
	if lf.url != "" || len(lf.command) > 0 || lf.asJSON || lf.callReads || lf.manifest != "" || lf.group != "" {
		return true
	}
	for _, f := range files {
		if strings.EqualFold(filepath.Ext(f), ".json") {
			return true
		}
	}
	return false
}

// lintSurface lints one tool surface: exit 0 pass, 1 findings, 2 when the
// tools could not be loaded or the server reached.
func lintSurface(ctx context.Context, lf *lintFlags, files []string, stdout, stderr io.Writer) int {
	if msg := lf.surfaceUsage(files); msg != "" {
		fmt.Fprintln(stderr, "promcp-device lint:", msg)
		return 2
	}
	var expected []string // with --manifest: the tools it (or its --group) declares
	if lf.manifest != "" {
		m, err := manifests.Load(lf.manifest)
		if err != nil {
			fmt.Fprintln(stderr, commandErr("lint", err))
			return 2
		}
		if expected, err = expectedTools(m, lf.group); err != nil {
			fmt.Fprintln(stderr, "promcp-device lint:", err)
			return 2
		}
	}
	var (
		tools  []*lint.Tool
		target string
		sess   *lint.Session
	)
	if len(files) == 1 {
		target = files[0]
		data, err := os.ReadFile(files[0])
		if err == nil {
			tools, err = lint.ParseTools(data)
		}
		if err != nil {
			fmt.Fprintf(stderr, "promcp-device lint: %s: %v\n", files[0], err)
			return 2
		}
	} else {
		t := lint.Target{URL: lf.url, Headers: lf.headers} // the server's stderr: its own section of the report
		if len(lf.command) > 0 {
			t.Command, t.Args = lf.command[0], lf.command[1:]
		}
		target = t.String()
		s, err := lint.Connect(ctx, t, "promcp-device lint", version)
		if err != nil {
			fmt.Fprintf(stderr, "promcp-device lint: could not list the tools: %v\n", err)
			return 2
		}
		defer s.Close()
		sess, tools = s, s.Tools
	}
	r := lint.Check(target, tools)
	if expected != nil {
		lint.Drift(r, expected, tools)
	}
	if lf.callReads {
		if err := sess.CallReads(ctx, r); err != nil {
			fmt.Fprintf(stderr, "promcp-device lint: --call-reads: %v\n", err)
			return 2
		}
	}
	if sess != nil {
		var err error
		if r.Stderr, err = sess.Finish(); err != nil {
			fmt.Fprintf(stderr, "promcp-device lint: closing the server: %v\n", err)
		}
	}
	if lf.asJSON {
		if err := lint.WriteJSON(stdout, r, lf.strict); err != nil {
			fmt.Fprintln(stderr, "promcp-device lint:", err)
			return 2
		}
	} else {
		lint.WriteText(stdout, r, lf.strict)
	}
	if !r.Pass(lf.strict) {
		return 1
	}
	return 0
}

// surfaceUsage says what is wrong with the flags and files given for
// linting a tool surface, or "" when they make sense together.
func (lf *lintFlags) surfaceUsage(files []string) string {
	sources := len(files)
	if lf.url != "" {
		sources++
	}
	if len(lf.command) > 0 {
		sources++
	}
	switch {
	case sources != 1:
		return "name one tool surface: a tool-list FILE.json, --url URL, or -- COMMAND ARGS..."
	case len(files) == 1 && !strings.EqualFold(filepath.Ext(files[0]), ".json"):
		return files[0] + ": --json, --strict, --call-reads and --manifest apply to a tool list (FILE.json) or a live server; lint manifests without them"
	case lf.group != "" && lf.manifest == "":
		return "--group NAME goes with --manifest FILE (the group's tools are the manifest's)"
	case lf.callReads && len(files) == 1:
		return "--call-reads needs a live server (--url or -- COMMAND)"
	}
	return ""
}
