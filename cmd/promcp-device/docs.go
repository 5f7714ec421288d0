package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/sitetest"
)

// The generated documentation: docs/manifest-reference.md and the JSON
// Schemas of the file formats. It is a subcommand of the binary, not a
// separate program, because the flags of each subcommand exist only here
// (each command builds its flag set when it runs): the generator asks
// every command for its flags the way a user does (-h), in process.
const (
	referenceFile = "manifest-reference.md"
	schemaDir     = "schema"
	regenerate    = "go run ./cmd/promcp-device docs"
)

// cmdDocs writes (or, with --check, compares) the generated reference and
// schemas under --dir.
func cmdDocs(c *cli) int {
	dir := c.String("dir", "docs", "the docs `DIR` to write manifest-reference.md and schema/*.json into")
	check := c.Bool("check", false, "write nothing: exit 1 naming each file that differs from what would be written")
	if !c.parse() {
		return 2
	}
	if c.NArg() > 0 {
		return c.usage("takes no arguments (got %q)", c.Arg(0))
	}
	files, err := generatedDocs(c.ctx)
	if err != nil {
		return c.fail(err)
	}
	stale := 0
	for _, name := range slices.Sorted(maps.Keys(files)) {
		path := filepath.Join(*dir, name)
		if *check {
			if old, err := os.ReadFile(path); err != nil || !bytes.Equal(old, files[name]) {
				fmt.Fprintf(c.stdout, "%s: differs from the code; run %s\n", path, regenerate)
				stale++
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return c.fail(err)
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			return c.fail(err)
		}
		fmt.Fprintf(c.stdout, "wrote %s\n", path)
	}
	if stale > 0 {
		return 1
	}
	return 0
}

// generatedDocs returns the generated files by path under docs/.
func generatedDocs(ctx context.Context) (map[string][]byte, error) {
	ref := manifests.Reference()
	formats := append(slices.Clone(ref.Formats), sitetest.Reference())
	cmds, err := commandFlags(ctx)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{referenceFile: referenceMarkdown(ref, formats, cmds)}
	for _, f := range formats {
		b, err := formatSchema(f)
		if err != nil {
			return nil, fmt.Errorf("schema of %s: %w", f.Name, err)
		}
		files[schemaDir+"/"+f.Name+".json"] = b
	}
	return files, nil
}

// cmdFlag is one flag of a command, as -h prints it.
type cmdFlag struct{ Name, Arg, Usage string }

// cmdDoc is a subcommand ("serve", "audit verify") and its flags; Usage
// is what -h prints when that is not a list of flags (a command's usage of
// its subcommands, or why it has none in this build).
type cmdDoc struct {
	Name  string
	Flags []cmdFlag
	Usage string
}

var (
	flagLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^  -([A-Za-z0-9][A-Za-z0-9._-]*)(?: (.+))?$`) })
	subLine  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*promcp-device ([a-z-]+) ([a-z-]+)\b`) })
)

// commandFlags asks every subcommand for its flags (COMMAND -h, in
// process); a command that answers with a usage of subcommands (audit
// verify|checkpoint|tail) is asked for each of those.
func commandFlags(ctx context.Context) ([]cmdDoc, error) {
	var out []cmdDoc
	for _, name := range slices.Sorted(maps.Keys(commands())) {
		if strings.HasPrefix(name, "-") || name == "docs" {
			continue // --version, -version; docs lists its own flags below
		}
		help := helpOf(ctx, name)
		if flags := parseFlags(help); len(flags) > 0 || !strings.Contains(help, "promcp-device "+name+" ") {
			out = append(out, flagCommand(name, flags, help))
			continue
		}
		var subs []string
		for _, l := range strings.Split(help, "\n") {
			if m := subLine().FindStringSubmatch(l); m != nil && m[1] == name && !slices.Contains(subs, m[2]) {
				subs = append(subs, m[2])
			}
		}
		if len(subs) == 0 {
			return nil, fmt.Errorf("%s -h lists neither flags nor subcommands:\n%s", name, help)
		}
		out = append(out, cmdDoc{Name: name, Usage: strings.TrimSpace(help)})
		for _, sub := range subs {
			h := helpOf(ctx, name, sub)
			out = append(out, flagCommand(name+" "+sub, parseFlags(h), h))
		}
	}
	h := helpOf(ctx, "docs")
	out = append(out, flagCommand("docs", parseFlags(h), h))
	return out, nil
}

// flagCommand is command name with its flags, or, with none, what its -h
// said besides the flag package's "Usage of" line.
func flagCommand(name string, flags []cmdFlag, help string) cmdDoc {
	c := cmdDoc{Name: name, Flags: flags}
	if len(flags) == 0 {
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(help), "\n") {
			if !strings.HasPrefix(l, "Usage of ") {
				lines = append(lines, l)
			}
		}
		c.Usage = strings.Join(lines, "\n")
	}
	return c
}

// helpOf is what promcp-device ARGS... -h prints, on either stream.
func helpOf(ctx context.Context, args ...string) string {
	var buf bytes.Buffer
	run(ctx, append(args, "-h"), strings.NewReader(""), &buf, &buf)
	return buf.String()
}

// parseFlags reads the flags of the flag package's usage text.
func parseFlags(help string) []cmdFlag {
	var out []cmdFlag
	for _, l := range strings.Split(help, "\n") {
		if m := flagLine().FindStringSubmatch(l); m != nil {
			out = append(out, cmdFlag{Name: m[1], Arg: m[2]})
			continue
		}
		if u, ok := strings.CutPrefix(l, "    \t"); ok && len(out) > 0 {
			f := &out[len(out)-1]
			f.Usage = strings.TrimSpace(f.Usage + " " + strings.TrimSpace(u))
		}
	}
	return out
}

// writeTable writes a Markdown table; cells have their | escaped and
// their line breaks joined.
func writeTable(w io.Writer, head []string, rows [][]string) {
	cell := func(s string) string {
		return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
	}
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat(" --- |", len(head)))
	for _, r := range rows {
		cs := make([]string, len(r))
		for i, c := range r {
			cs[i] = cell(c)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cs, " | "))
	}
	fmt.Fprintln(w)
}
