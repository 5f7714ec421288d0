package main

import (
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
)

// buildDate is set at build time with -ldflags "-X main.buildDate=..."
// (scripts/release does); without it the commit's time from the build
// info stands in.
var buildDate = ""

// commit is set at build time with -ldflags "-X main.commit=..." where the
// Go build info has no VCS stamp (a build in a git worktree, or with
// -buildvcs=false); the build info's vcs.revision stands in otherwise.
var commit = ""

// buildInfo is what `version` prints: the module version, the commit and
// the build date, from the Go build info (vcs.revision, vcs.time,
// vcs.modified) unless the release stamped them with -ldflags -X.
type buildInfo struct {
	Version, Commit, Date string
	Modified              bool
	GoVersion             string
}

// readBuildInfo reads the build info of the running binary.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Date: buildDate, Commit: commit}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.GoVersion = info.GoVersion
	if b.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		b.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			if b.Commit == "" {
				b.Commit = s.Value
			}
		case "vcs.time":
			if b.Date == "" {
				b.Date = s.Value
			}
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the version line: "promcp-device v1.2.3 (commit 0123abc, built
// 2026-11-30T20:00:00Z, go1.26.0)".
func (b buildInfo) String() string {
	commit := b.Commit
	if commit == "" {
		commit = "unknown"
	} else if len(commit) > 12 {
		commit = commit[:12]
	}
	if b.Modified {
		commit += "+modified"
	}
	date := b.Date
	if date == "" {
		date = "unknown"
	}
	return fmt.Sprintf("promcp-device %s (commit %s, built %s, %s)", b.Version, commit, date, b.GoVersion)
}

func cmdVersion(c *cli) int {
	if len(c.args) > 0 {
		fmt.Fprintf(c.stderr, "promcp-device version: takes no arguments (got %q)\n", c.args[0])
		return 2
	}
	fmt.Fprintln(c.stdout, readBuildInfo())
	if l := featureLine(); l != "" {
		fmt.Fprintln(c.stdout, "  "+l)
	}
	return 0
}

// newLoggerFormat is newLogger with --log-format: text or json.
func newLoggerFormat(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}
