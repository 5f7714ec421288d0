//go:build noconsole

package main

import "testing"

// TestBuiltWithoutConsole: a binary built with -tags noconsole refuses the
// console, its accounts and approval notifications, naming the tag.
func TestBuiltWithoutConsole(t *testing.T) {
	gh := example("greenhouse.yml")
	runBuiltWithout(t, "noconsole", []builtWithoutCase{
		{"serve --console", []string{"serve", "--sim", "--manifest", gh, "--http", "127.0.0.1:0", "--console"}},
		{"serve --console-users", []string{"serve", "--sim", "--manifest", gh, "--http", "127.0.0.1:0", "--console-users", "users.txt"}},
		{"serve --notify-webhook", []string{"serve", "--sim", "--manifest", gh, "--http", "127.0.0.1:0", "--notify-webhook", "https://ntfy.example"}},
		{"console-user", []string{"console-user", "list", "--file", "users.txt"}},
	})
}
