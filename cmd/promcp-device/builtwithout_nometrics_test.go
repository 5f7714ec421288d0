//go:build nometrics

package main

import "testing"

// TestBuiltWithoutMetrics: a binary built with -tags nometrics refuses
// --metrics auth or open, naming the tag (off is its default).
func TestBuiltWithoutMetrics(t *testing.T) {
	gh := example("greenhouse.yml")
	runBuiltWithout(t, "nometrics", []builtWithoutCase{
		{"serve --metrics open", []string{"serve", "--sim", "--manifest", gh, "--http", "127.0.0.1:0", "--metrics", "open"}},
		{"serve --metrics auth", []string{"serve", "--sim", "--manifest", gh, "--http", "127.0.0.1:0", "--metrics", "auth"}},
	})
}
