package main

import (
	"fmt"
	"slices"
	"strings"
)

// leftOut are the features this binary was built without, each named by
// the file its build tag selects (fleet_off.go for -tags nofleet, and so
// on; the file built without the tag names it ""): a site leaves out what
// it does not use, as Telegraf's custom builds do, and the binary is
// smaller and starts less.
func leftOut() []string {
	return slices.DeleteFunc([]string{leftOutFleet, leftOutMQTT, leftOutConsole, leftOutMetrics},
		func(s string) bool { return s == "" })
}

// builtWithout is the refusal of a feature this binary was built without:
// the manifest, flag or command that asks for it gets this, naming the tag
// to drop.
func builtWithout(feature, tag string) error {
	return fmt.Errorf("this binary was built without the %s; rebuild without -tags %s", feature, tag)
}

// featureLine says which of the optional features this binary leaves out
// ("" when it has them all), for promcp-device version.
func featureLine() string {
	s := leftOut()
	if len(s) == 0 {
		return ""
	}
	slices.Sort(s)
	return "built without: " + strings.Join(s, ", ")
}
