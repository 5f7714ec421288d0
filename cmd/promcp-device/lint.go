package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
)

func cmdLint(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "promcp-device lint: name at least one manifest or scenario FILE")
		return 2
	}
	code := 0
	for _, path := range fs.Args() {
		if data, err := os.ReadFile(path); err == nil && manifests.IsScenario(data) {
			if !lintScenario(path, data, stdout) {
				code = 1
			}
			continue
		}
		m, err := manifests.Load(path)
		if err != nil {
			fmt.Fprintln(stdout, err)
			code = 1
			continue
		}
		reads, dos := 0, 0
		for _, c := range m.Capabilities {
			reads++
			if c.Do != nil {
				dos++
			}
		}
		fmt.Fprintf(stdout, "%s: ok: gateway %s, %d buses, %d devices, %d tools (%d read_*, %d do_*, can_do)\n",
			path, m.Gateway, len(m.Buses), len(m.Devices), reads+dos+1, reads, dos)
	}
	return code
}

// lintScenario checks a fault scenario, against the manifest it names when
// it names one.
func lintScenario(path string, data []byte, stdout io.Writer) bool {
	sc, err := manifests.ParseScenario(path, data, nil)
	if err != nil {
		fmt.Fprintln(stdout, err)
		return false
	}
	against := "no manifest named: devices not checked"
	if sc.Manifest != "" {
		mpath := sc.Manifest
		if !filepath.IsAbs(mpath) {
			mpath = filepath.Join(filepath.Dir(path), mpath)
		}
		m, err := manifests.Load(mpath)
		if err != nil {
			fmt.Fprintf(stdout, "%s: manifest %s: %v\n", path, sc.Manifest, err)
			return false
		}
		if sc, err = manifests.ParseScenario(path, data, m); err != nil {
			fmt.Fprintln(stdout, err)
			return false
		}
		against = "checked against " + mpath
	}
	fmt.Fprintf(stdout, "%s: ok: scenario %s, %d faults (%s)\n", path, sc.Name, len(sc.Faults), against)
	return true
}

// toolJSON is one tool as `tools --json` prints it: the MCP fields plus the
// output schema again under responseSchema, which proMCP linters read.
type toolJSON struct {
	Name           string          `json:"name"`
	Kind           promcp.Kind     `json:"kind"`
	Title          string          `json:"title,omitempty"`
	Description    string          `json:"description"`
	InputSchema    json.RawMessage `json:"inputSchema"`
	OutputSchema   json.RawMessage `json:"outputSchema"`
	ResponseSchema json.RawMessage `json:"responseSchema"`
	Annotations    any             `json:"annotations"`
}

func cmdTools(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	fs.SetOutput(stderr)
	manifest := fs.String("manifest", "", "manifest `FILE` (required)")
	asJSON := fs.Bool("json", false, "print the tools as JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *manifest == "" {
		fmt.Fprintln(stderr, "promcp-device tools: --manifest FILE is required")
		return 2
	}
	m, err := manifests.Load(*manifest)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	// The tool surface depends only on the manifest: build it on the
	// simulator so that listing never touches hardware.
	gw, err := openGateway(ctx, m, true, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		fmt.Fprintln(stderr, "promcp-device tools:", err)
		return 1
	}
	defer gw.Close()
	var out []toolJSON
	for _, t := range gw.srv.Tools() {
		out = append(out, toolJSON{
			Name: t.MCP.Name, Kind: t.Kind, Title: t.MCP.Title, Description: t.MCP.Description,
			InputSchema: t.MCP.RawInputSchema, OutputSchema: t.MCP.RawOutputSchema,
			ResponseSchema: t.MCP.RawOutputSchema, Annotations: t.MCP.Annotations,
		})
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintln(stderr, "promcp-device tools:", err)
			return 1
		}
		return 0
	}
	for _, t := range out {
		fmt.Fprintf(stdout, "%-8s %-28s %s\n", t.Kind, t.Name, firstLine(t.Description))
	}
	return 0
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
