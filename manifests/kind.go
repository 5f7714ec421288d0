package manifests

import (
	"maps"
	"slices"

	"github.com/goccy/go-yaml/ast"
)

// FileKind is the kind of a YAML file the tools read, told by its content.
type FileKind string

// The kinds of file KindOf tells apart.
const (
	KindManifest       FileKind = "manifest"
	KindPhysMCP        FileKind = "physmcp manifest"
	KindPolicy         FileKind = "policy"
	KindPhysMCPPolicy  FileKind = "physmcp policy"
	KindFleet          FileKind = "fleet file"
	KindScenario       FileKind = "scenario"
	KindSiteTest       FileKind = "site test"
	KindUnknown        FileKind = ""
	KindNotYAMLMapping FileKind = "not a YAML mapping"
)

var (
	// Top-level keys only one kind has.
	manifestOnlyKeys = []string{"buses", "devices", "capabilities", "groups", "sim", "jobs"}
	fleetOnlyKeys    = []string{"role", "hubs", "listen", "cluster", "leaf_ping", "can_do_budget", "credentials", "users", "insecure", "store", "http", "zone", "tags", "profile"}
	policyOnlyKeys   = []string{"actions", "roles", "default_roles", "timezone"}
)

// KindOf tells what data is by its top-level keys: a manifest (proMCP's or
// PhysMCP's), a policy (proMCP's or PhysMCP's), a fleet file, a fault
// scenario or a site test. KindNotYAMLMapping is data that does not parse
// or whose first document is not a mapping; KindUnknown a mapping whose
// keys fit no kind.
func KindOf(data []byte) FileKind {
	f, err := parseBytes(data)
	if err != nil || len(f.Docs) == 0 || f.Docs[0] == nil {
		return KindNotYAMLMapping
	}
	if _, ok := f.Docs[0].Body.(*ast.MappingNode); !ok {
		return KindNotYAMLMapping
	}
	keys := topKeys(data)
	has := func(list []string) bool { return slices.ContainsFunc(list, func(k string) bool { return keys[k] }) }
	switch {
	case keys["test"] && keys["steps"]:
		// Before the scenario check: a site test may name its fault
		// scenario under "scenario:", which is not what makes it one.
		return KindSiteTest
	case IsScenario(data):
		return KindScenario
	case IsPhysMCP(data):
		return KindPhysMCP
	case IsPhysMCPPolicy(data):
		return KindPhysMCPPolicy
	case has(manifestOnlyKeys):
		return KindManifest
	case has(fleetOnlyKeys):
		return KindFleet
	case has(policyOnlyKeys):
		return KindPolicy
	case keys["gateway"]:
		return KindManifest // one with no buses, devices or capabilities yet: Parse says what it lacks
	}
	return KindUnknown
}

// KeyPosition is where the value at path (keys from the root of the first
// document: "cluster", "peers") is in data, for a finding about it; the
// deepest key of path found when the rest is not there, and file alone
// when none is.
func KeyPosition(file string, data []byte, path ...string) Position {
	pos := Position{File: file}
	f, err := parseBytes(data)
	if err != nil || len(f.Docs) == 0 || f.Docs[0] == nil {
		return pos
	}
	node := f.Docs[0].Body
	for _, k := range path {
		m, ok := node.(*ast.MappingNode)
		if !ok {
			return pos
		}
		i := slices.IndexFunc(m.Values, func(mv *ast.MappingValueNode) bool { return mv != nil && mv.Key != nil && keyString(mv.Key) == k })
		if i < 0 {
			return pos
		}
		node = m.Values[i].Value
		if t := m.Values[i].Key.GetToken(); t != nil {
			pos.Line, pos.Column = t.Position.Line, t.Position.Column
		}
	}
	return pos
}

// TopKeys are the top-level keys of data's first document, sorted.
func TopKeys(data []byte) []string {
	return slices.Sorted(maps.Keys(topKeys(data)))
}
