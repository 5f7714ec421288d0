package main

import (
	"fmt"
	"slices"
	"strings"
)

// leftOut are the features this binary was built without, each added by
// the file its build tag selects (fleet_off.go for -tags nofleet, and so
// on): a site leaves out what it does not use, as Telegraf's custom
// builds do, and the binary is smaller and starts less.
var leftOut []string

// builtWithout is the refusal of a feature this binary was built without:
// the manifest, flag or command that asks for it gets this, naming the tag
// to drop.
func builtWithout(feature, tag string) error {
	return fmt.Errorf("this binary was built without the %s; rebuild without -tags %s", feature, tag)
}

// featureLine says which of the optional features this binary leaves out
// ("" when it has them all), for promcp-device version.
func featureLine() string {
	if len(leftOut) == 0 {
		return ""
	}
	s := slices.Clone(leftOut)
	slices.Sort(s)
	return "built without: " + strings.Join(s, ", ")
}
