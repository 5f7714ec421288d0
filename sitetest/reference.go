package sitetest

import (
	"slices"

	"github.com/promcp/promcp-device/manifests"
)

// Reference returns the mappings of the site-test format as its decoder
// reads them (the keys of each, from the decoder's own lists), for the
// generated reference and the format's JSON Schema.
func Reference() manifests.RefFormat {
	n := func(path string, keys []string) manifests.RefNode {
		return manifests.RefNode{Path: path, Keys: slices.Clone(keys)}
	}
	return manifests.RefFormat{Name: "site-test", Nodes: []manifests.RefNode{
		n("", testKeys),
		n("caller", callerKeys),
		n("steps[]", stepKeys),
		n("steps[].as", callerKeys),
		n("steps[].expect", expectKeys),
		n("steps[].set", setKeys),
		n("steps[].approve", decisionKeys),
		n("steps[].approve.as", callerKeys),
		n("steps[].deny", decisionKeys),
		n("steps[].deny.as", callerKeys),
	}}
}
