package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

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
		fmt.Fprintln(stderr, "promcp-device lint: name at least one manifest FILE")
		return 2
	}
	code := 0
	for _, path := range fs.Args() {
		if manifests.IsCompanion(path) {
			// A policy file is checked with the manifest beside it.
			if !strings.HasSuffix(path, ".policy"+filepath.Ext(path)) {
				fmt.Fprintf(stdout, "%s: not a manifest or a policy file (want NAME.yml or NAME.policy.yml)\n", path)
				code = 1
				continue
			}
			m, err := manifests.Load(manifests.ManifestOf(path))
			if err == nil {
				_, err = loadPolicy(manifests.ManifestOf(path), path, m)
			}
			if err != nil {
				fmt.Fprintln(stdout, err)
				code = 1
				continue
			}
			fmt.Fprintf(stdout, "%s: ok: policy for %s\n", path, manifests.ManifestOf(path))
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
		pol, err := loadPolicy(path, "", m)
		if err != nil {
			fmt.Fprintln(stdout, err)
			code = 1
			continue
		}
		if pol != nil {
			fmt.Fprintf(stdout, "%s: ok: policy for %d actions\n", pol.File, len(pol.Actions))
		}
	}
	return code
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
	gw, err := openGateway(ctx, m, gatewayOptions{simulate: true}, slog.New(slog.DiscardHandler))
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
