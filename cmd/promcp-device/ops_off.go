//go:build nometrics

package main

import (
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/server"
)

// Built with -tags nometrics: no package metrics (its own text-format
// writer, about 0.13 MiB), so no /metrics, /healthz or /readyz; --metrics is
// off by default and --metrics auth or open refuse, naming the tag.

// leftOutMetrics names this feature in promcp-device version (features.go).
const leftOutMetrics = "metrics (-tags nometrics)"

const (
	metricsAuth    = "auth"
	metricsOpen    = "open"
	metricsOff     = "off"
	defaultMetrics = metricsOff
)

// opsEndpoints is never made without metrics: every use is of a nil one.
type opsEndpoints struct {
	mode    string
	metrics noMetrics
	opened  atomic.Bool
}

// noMetrics observes nothing.
type noMetrics struct{}

func (noMetrics) Capabilities(*capabilities.Set) {}
func (noMetrics) ApprovalsPending(func() int)    {}

func (o *opsEndpoints) readObserver() capabilities.ReadObserver { return nil }

func (o *opsEndpoints) auditor(a server.Auditor) server.Auditor { return a }

func (o *opsEndpoints) wrap(next http.Handler, _ *server.Tokens, _ []*server.CertVerifier) http.Handler {
	return next
}

func (f *serveFlags) opsEndpoints(*gatewayOptions) (*opsEndpoints, error) {
	switch f.metricsMode {
	case metricsOff:
		return nil, nil
	case metricsAuth, metricsOpen:
		return nil, failErr(fmt.Errorf("--metrics %s: %w", f.metricsMode, builtWithout("Prometheus metrics and health endpoints", "nometrics")), false)
	}
	return nil, usageErr("--metrics %q: want auth, open or off", f.metricsMode)
}
