//go:build noconsole

package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/server"
)

// Built with -tags noconsole: no operator console, no console accounts and
// no approval notifications (webhook, ntfy, MQTT), which notify from the
// console's desk. serve --console, --console-users, --notify-* and the
// console-user command refuse, naming the tag.

// leftOutConsole names this feature in promcp-device version (features.go).
const leftOutConsole = "operator console (-tags noconsole)"

var errNoConsole = builtWithout("operator console", "noconsole")

// consoleAccounts are never loaded without the console.
type consoleAccounts = *struct{}

func defaultApprovers() string { return "" }

func (f *serveFlags) checkConsoleUsers() error {
	for flag, set := range map[string]bool{"--console": f.console, "--console-users": f.consoleUsers != "", "--console-secure-cookie": f.consoleSecureCookie} {
		if set {
			return failErr(fmt.Errorf("%s: %w", flag, errNoConsole), false)
		}
	}
	return nil
}

func (f *serveFlags) loadConsoleUsers([]string) error { return nil }

func (f *serveFlags) newConsole(*openedGateway, server.Caller, *slog.Logger) (http.Handler, error) {
	return nil, failErr(errNoConsole, false)
}

func withConsole(mcp, _ http.Handler) http.Handler { return mcp }

func cmdConsoleUser(c *cli) int { return c.fail(errNoConsole) }

// notifyConfig keeps serve's --notify-* flags, to refuse them clearly.
type notifyConfig struct{ set []string }

func notifyFlags(fs *flag.FlagSet) *notifyConfig {
	c := &notifyConfig{}
	for _, name := range []string{"notify-webhook", "notify-secret", "notify-topic", "notify-mqtt", "notify-mqtt-topic", "notify-remind", "console-url"} {
		fs.Func(name, "not in this binary (built with -tags noconsole)", func(string) error {
			c.set = append(c.set, "--"+name)
			return nil
		})
	}
	return c
}

func (c *notifyConfig) check(bool, bool) error {
	if len(c.set) > 0 {
		return failErr(fmt.Errorf("%s: %w", c.set[0], errNoConsole), false)
	}
	return nil
}

func (c *notifyConfig) start(*server.Desk, *manifests.Manifest, clock.Clock, *slog.Logger) (func(), error) {
	return func() {}, nil
}
