package sharedtest

import (
	"log/slog"
	"os"
)

// diagLog is the log of the test fleet's NATS servers: nil (none)
// unless SHAREDTEST_NATSLOG is set, then their notices, warnings and
// errors on stderr, each with its server's name (nats=hub-0, nats=gw1):
// to see links go stale, leaders change and leaves relink in a fault
// scenario.
func diagLog() *slog.Logger {
	if os.Getenv("SHAREDTEST_NATSLOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}
