package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"slices"
	"strings"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/sitetest"
)

// lintFleet checks a fleet file: every problem manifests.LoadFleet finds
// (each at its line and column: an edge without hubs, a credentials file
// missing or readable by others, ...), then what can be told of the fleet
// without running it.
func lintFleet(path string, data []byte, stdout io.Writer) bool {
	f, err := manifests.LoadFleet(path)
	if err != nil {
		fmt.Fprintln(stdout, err)
		return false
	}
	what := fmt.Sprintf("%s %s", f.Role, f.Gateway)
	switch f.Role {
	case manifests.RoleHub:
		what += fmt.Sprintf(", a cluster of %d members", 1+len(f.Cluster.Peers))
	default:
		what += ", dialling " + plural(len(f.Hubs), "hub URL")
	}
	if f.HTTP != "" {
		what += ", fleet endpoint on " + f.HTTP
	}
	ok := true
	type line struct {
		at   int
		text string
	}
	var lines []line
	for _, fd := range fleetFindings(f, data) {
		sev := "warning: "
		if fd.err {
			sev, ok = "", false
		}
		pos := manifests.KeyPosition(path, data, fd.at...)
		lines = append(lines, line{pos.Line, fmt.Sprintf("%s: %s%s: %s", pos, sev, strings.Join(fd.at, "."), fd.msg)})
	}
	slices.SortStableFunc(lines, func(a, b line) int { return a.at - b.at })
	if ok {
		fmt.Fprintf(stdout, "%s: ok: fleet file, %s\n", path, what)
	}
	for _, l := range lines {
		fmt.Fprintln(stdout, l.text)
	}
	return ok
}

// fleetFinding is one thing lint says of a fleet file beyond LoadFleet:
// at the key path at, an error or a warning.
type fleetFinding struct {
	at  []string
	err bool
	msg string
}

// fleetFindings are the static rules of a fleet file that loads.
func fleetFindings(f *manifests.Fleet, data []byte) []fleetFinding {
	var out []fleetFinding
	add := func(err bool, msg string, at ...string) { out = append(out, fleetFinding{at: at, err: err, msg: msg}) }
	if f.Insecure {
		add(false, "the fleet authenticates nothing and its links are not encrypted: a trusted network only", "insecure")
	}
	if f.Store == "" && f.Role != manifests.RoleThinEdge {
		add(false, "none: JetStream keeps "+storeLoses(f.Role)+" in a temporary directory removed at exit, lost on every restart", "store")
	} else if fi, err := os.Stat(f.Store); err == nil && !fi.IsDir() {
		add(true, fmt.Sprintf("%s is a file, not a directory (JetStream keeps its data in a directory)", f.Store), "store")
	}
	if d := duplicates(f.Hubs); len(d) > 0 {
		add(false, "lists "+strings.Join(d, ", ")+" more than once", "hubs")
	}
	if f.Role == manifests.RoleHub {
		out = append(out, hubFindings(f)...)
	}
	return out
}

func storeLoses(role manifests.FleetRole) string {
	if role == manifests.RoleHub {
		return "the fleet's replicated state (registry, cooldowns, leases, audit)"
	}
	return "the audit records held while the hub is cut off"
}

// hubFindings are the rules of a hub member's file: the cluster it
// forms, and the quorum its replicated state needs.
func hubFindings(f *manifests.Fleet) []fleetFinding {
	var out []fleetFinding
	add := func(err bool, msg string, at ...string) { out = append(out, fleetFinding{at: at, err: err, msg: msg}) }
	if d := duplicates(f.Cluster.Peers); len(d) > 0 {
		add(true, "lists "+strings.Join(d, ", ")+" more than once", "cluster", "peers")
	}
	for _, p := range f.Cluster.Peers {
		if sameHostPort(p, f.Listen.Cluster) {
			add(true, fmt.Sprintf("lists %s, this member's own listen.cluster: list the other members only", p), "cluster", "peers")
		}
	}
	members := 1 + len(f.Cluster.Peers)
	switch {
	case members == 2 || members == 4:
		add(false, fmt.Sprintf("a hub cluster of %d members needs %d of them running (a majority): it stays up with %d down, as %s would, "+
			"and beyond that the fleet's shared state stops (shared actions refused as partition_no_quorum); run 3 or 5",
			members, members/2+1, (members-1)/2, plural(members-1, "member")), "cluster", "peers")
	case members > 5:
		add(false, fmt.Sprintf("a hub cluster of %d members: promcp-device hub keeps at most 5 copies of the fleet's buckets (--replicas 1 to 5)", members), "cluster", "peers")
	}
	if members < 3 {
		add(false, fmt.Sprintf("a hub cluster of %d: promcp-device hub keeps 3 copies of the fleet's buckets by default, which %d cannot hold: run it with --replicas %d",
			members, members, members), "cluster", "peers")
	}
	return out
}

// duplicates are the values listed more than once.
func duplicates(list []string) []string {
	seen := map[string]int{}
	for _, s := range list {
		seen[s]++
	}
	var out []string
	for _, s := range slices.Sorted(maps.Keys(seen)) {
		if seen[s] > 1 {
			out = append(out, s)
		}
	}
	return out
}

// sameHostPort says that url (nats://host:port or host:port) names the
// address hostPort.
func sameHostPort(url, hostPort string) bool {
	if hostPort == "" {
		return false
	}
	_, rest, ok := strings.Cut(url, "://")
	if !ok {
		rest = url
	}
	h1, p1, err1 := net.SplitHostPort(rest)
	h2, p2, err2 := net.SplitHostPort(hostPort)
	return err1 == nil && err2 == nil && p1 == p2 && (h1 == h2 || isLocal(h1) && isLocal(h2))
}

func isLocal(h string) bool {
	ip := net.ParseIP(h)
	return h == "localhost" || h == "" || ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// lintSiteTest checks a site test: its format, and the manifest, policy
// and scenario it names.
func lintSiteTest(path string, stdout io.Writer) bool {
	t, err := sitetest.Load(path)
	if err != nil {
		fmt.Fprintln(stdout, err)
		return false
	}
	fmt.Fprintf(stdout, "%s: ok: site test %s, %d steps against %s\n", path, t.Name, len(t.Steps), t.Manifest)
	return true
}

// unknownKind is lint's answer for a file whose kind it cannot tell.
func unknownKind(path string, data []byte, stdout io.Writer) bool {
	fmt.Fprintf(stdout, "%s: cannot tell what kind of file this is from its top-level keys (%s): want a manifest (gateway:, buses:, devices:, capabilities:), "+
		"a policy (actions:, roles:), a fleet file (role:, gateway:, hubs:), a fault scenario (scenario:) or a site test (test:, steps:)\n",
		path, strings.Join(manifests.TopKeys(data), ", "))
	return false
}

// flagsFirst moves the flags among args (each with its value) before the
// other arguments, so that `lint FILE --strict` parses as
// `lint --strict FILE`. A "--" ends the flags.
func flagsFirst(fs *flag.FlagSet, args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			rest = append(rest, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if fl := fs.Lookup(name); fl != nil && !isBoolFlag(fl) && i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	return append(flags, rest...)
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// warningCount counts the warning lines written through it.
type warningCount struct {
	w io.Writer
	n int
}

func (c *warningCount) Write(p []byte) (int, error) {
	c.n += strings.Count(string(p), ": warning: ")
	return c.w.Write(p)
}

// plural is "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
