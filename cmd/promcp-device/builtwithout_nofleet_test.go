//go:build nofleet

package main

import "testing"

// TestBuiltWithoutFleet: a binary built with -tags nofleet refuses what
// asks for the fleet, naming the tag.
func TestBuiltWithoutFleet(t *testing.T) {
	dir := t.TempDir()
	runBuiltWithout(t, "nofleet", []builtWithoutCase{
		{"serve --fleet", []string{"serve", "--sim", "--manifest", example("greenhouse.yml"), "--fleet", example("fleet/gw1.yml")}},
		{"hub", []string{"hub", "--fleet", example("fleet/hub1.yml")}},
		{"fleet init", []string{"fleet", "init", dir + "/f", "--hubs", "hub1"}},
		{"audit tail --fleet", []string{"audit", "tail", "--fleet", "--nats", "nats://127.0.0.1:4222"}},
	})
}
