package lint

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/promcp/promcp-device/surface"
)

// printable replaces control characters (a hostile server's names and
// descriptions could carry terminal escapes) with U+FFFD.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

var icon = map[Severity]string{Error: "✗", Warning: "⚠", Info: "·"}

// WriteText prints r as the spec's example does: the surface's findings,
// then a line per tool (✓ when clean, else its name and a line per
// finding with its code), and the totals.
func WriteText(w io.Writer, r *Report, strict bool) {
	fmt.Fprintf(w, "promcp-device lint  proMCP v0.2 — %s\n\n", printable(r.Target))
	if len(r.Server) > 0 {
		fmt.Fprintln(w, "server")
		for _, f := range r.Server {
			fmt.Fprintf(w, "    %s %-30s [%s] %s\n", icon[f.Severity], "server", f.Code, printable(f.Message))
		}
	}
	for _, t := range r.Tools {
		if len(t.Findings) == 0 {
			fmt.Fprintf(w, "  ✓ %s\n", printable(t.Name))
			continue
		}
		fmt.Fprintf(w, "  %s\n", printable(t.Name))
		for _, f := range t.Findings {
			fmt.Fprintf(w, "    %s %-30s [%s] %s\n", icon[f.Severity], printable(f.Tool), f.Code, printable(f.Message))
		}
	}
	writeStderr(w, r.Stderr)
	e, wn, in := r.Count()
	sd := seeds(r)
	fmt.Fprintf(w, "\nseed buckets: real_dispatch %d, read_only %d, native_only %d (%d execute on the server, %d native only; %d unclassified)\n",
		sd.RealDispatch, sd.ReadOnly, sd.NativeOnly, sd.ExecutesServerSide, sd.NativeOnlyCount, sd.Unclassified)
	if r.Calls > 0 {
		fmt.Fprintf(w, "\n--call-reads: %d calls to read_* and can_do, answers checked (no do_* called)\n", r.Calls)
	}
	verdict := "pass"
	if !r.Pass(strict) {
		verdict = "fail"
	}
	if strict {
		verdict += " (strict: warnings fail)"
	}
	mark := "✓"
	if e > 0 {
		mark = "✗"
	}
	fmt.Fprintf(w, "\n%s %d error(s)  %d warning(s)  %d info  %d tools: %s\n", mark, e, wn, in, len(r.Tools), verdict)
}

// stderrLines splits a server's standard error into printable lines.
func stderrLines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = printable(strings.TrimSuffix(l, "\r"))
	}
	return lines
}

// writeStderr prints the server's standard error in its own section,
// each line behind a bar so that none reads as a finding.
func writeStderr(w io.Writer, stderr string) {
	lines := stderrLines(stderr)
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\nserver stderr (%d lines, as the server wrote them; not findings)\n", len(lines))
	for _, l := range lines {
		fmt.Fprintf(w, "  | %s\n", l)
	}
}

// jsonReport is the --json shape, the reference linter's plus the target
// and each finding's tool.
type jsonReport struct {
	PromcpVersion string       `json:"promcp_version"`
	Target        string       `json:"target"`
	Server        []Finding    `json:"server"`
	Tools         []ToolReport `json:"tools"`
	// ServerStderr is the linted server's standard error, a line each.
	ServerStderr []string `json:"server_stderr,omitempty"`
	Summary      struct {
		Errors   int  `json:"errors"`
		Warnings int  `json:"warnings"`
		Info     int  `json:"info"`
		Calls    int  `json:"calls"`
		Strict   bool `json:"strict"`
		Pass     bool `json:"pass"`
		// Seeds is the tool-provenance seed's triage of the tools.
		Seeds SeedCounts `json:"seeds"`
	} `json:"summary"`
}

// SeedCounts is the tool-provenance seed's triage of a surface, counted:
// its three buckets (each classified tool in exactly one), the honest
// split (how many execute on the server, how many are native only) and
// the tools no bucket fits (not read_*, do_* or can_do: drift).
type SeedCounts struct {
	RealDispatch       int `json:"real_dispatch"`
	ReadOnly           int `json:"read_only"`
	NativeOnly         int `json:"native_only"`
	ExecutesServerSide int `json:"executes_server_side"`
	NativeOnlyCount    int `json:"native_only_count"`
	Unclassified       int `json:"unclassified"`
}

func seeds(r *Report) SeedCounts {
	var names []string
	for _, t := range r.Tools {
		names = append(names, t.Name)
	}
	tr := surface.Classify(names)
	sd := tr.Seeds()
	server, native := sd.Summary()
	return SeedCounts{RealDispatch: len(sd.RealDispatch), ReadOnly: len(sd.ReadOnly), NativeOnly: len(sd.NativeOnly),
		ExecutesServerSide: server, NativeOnlyCount: native, Unclassified: len(tr.Unclassified)}
}

// WriteJSON prints r as JSON.
func WriteJSON(w io.Writer, r *Report, strict bool) error {
	out := jsonReport{PromcpVersion: "0.2", Target: r.Target, Server: r.Server, Tools: r.Tools, ServerStderr: stderrLines(r.Stderr)}
	if out.Server == nil {
		out.Server = []Finding{}
	}
	if out.Tools == nil {
		out.Tools = []ToolReport{}
	}
	out.Summary.Errors, out.Summary.Warnings, out.Summary.Info = r.Count()
	out.Summary.Calls = r.Calls
	out.Summary.Strict, out.Summary.Pass = strict, r.Pass(strict)
	out.Summary.Seeds = seeds(r)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
