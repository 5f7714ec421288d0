//go:build !nometrics

package main

// /metrics, /healthz and /readyz beside /mcp: what an operator's
// Prometheus scrapes and what a supervisor (systemd, a load balancer)
// probes. See "Metrics and health" in docs/operations.md.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/metrics"
	"github.com/promcp/promcp-device/server"
)

// leftOutMetrics is empty: this binary has the feature (the -tags build names it, features.go).
const leftOutMetrics = ""

// Values of --metrics.
const (
	metricsAuth = "auth" // behind the same bearer tokens as /mcp (none needed without --tokens)
	metricsOpen = "open" // no token needed: for a scraper that has none
	metricsOff  = "off"  // not served (404)

	defaultMetrics = metricsAuth // --metrics' default (off in a build without metrics)
)

// opsEndpoints serves /metrics, /healthz and /readyz.
type opsEndpoints struct {
	mode     string
	metrics  *metrics.Metrics
	stateDir string         // "": in memory, nothing to write
	opened   atomic.Bool    // the gateway opened its buses
	auditErr atomic.Value   // error string of the latest failed audit append ("" when the latest succeeded)
	audit    server.Auditor // the auditor the server uses, timed; nil without --state
}

// newOps returns the endpoints for --metrics mode, or an error naming the
// flag when mode is not one of auth, open or off.
func newOps(mode, stateDir string) (*opsEndpoints, error) {
	switch mode {
	case metricsAuth, metricsOpen, metricsOff:
	default:
		return nil, fmt.Errorf("--metrics %q: want auth, open or off", mode)
	}
	o := &opsEndpoints{mode: mode, metrics: metrics.New(), stateDir: stateDir}
	o.auditErr.Store("")
	return o, nil
}

// readObserver is the capabilities' observer (nil without ops).
func (o *opsEndpoints) readObserver() capabilities.ReadObserver {
	if o == nil {
		return nil
	}
	return o.metrics
}

// auditor times and watches the appends of a.
func (o *opsEndpoints) auditor(a server.Auditor) server.Auditor {
	timed := o.metrics.Auditor(a)
	o.audit = auditOutcome{next: timed, o: o}
	return o.audit
}

// wrap serves the endpoints in front of next (the MCP handler), with
// tokens or client certificates (neither: none required) when the mode is
// auth.
func (o *opsEndpoints) wrap(next http.Handler, tokens *server.Tokens, certs []*server.CertVerifier) http.Handler {
	if o == nil || o.mode == metricsOff {
		return next
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", o.metrics.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", o.ready)
	var ops http.Handler = mux
	if o.mode == metricsAuth && (tokens != nil || len(certs) > 0) {
		ops = requireToken(mux, tokens, certs)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics", "/healthz", "/readyz":
			ops.ServeHTTP(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// requireToken refuses a request without a valid bearer token or client
// certificate (401).
func requireToken(next http.Handler, tokens *server.Tokens, certs []*server.CertVerifier) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := server.Authenticate(r, tokens, certs); err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="promcp-device"`)
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "a valid bearer token is required (Authorization: Bearer TOKEN)"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ready answers 200 when the buses are open, the state directory takes a
// write and the audit log's latest append succeeded; 503 with the failed
// checks otherwise.
func (o *opsEndpoints) ready(w http.ResponseWriter, r *http.Request) {
	checks := map[string]string{"buses": "ok", "state": "ok", "audit": "ok"}
	if !o.opened.Load() {
		checks["buses"] = "not opened"
	}
	if o.stateDir == "" {
		checks["state"], checks["audit"] = "ok (in memory: no --state)", "ok (none: no --state)"
	} else {
		if err := probeWrite(o.stateDir); err != nil {
			checks["state"] = err.Error()
		}
		if msg, _ := o.auditErr.Load().(string); msg != "" {
			checks["audit"] = "the latest append failed: " + msg
		} else if err := probeAppend(filepath.Join(o.stateDir, auditFile)); err != nil {
			checks["audit"] = err.Error()
		}
	}
	status, code := "ready", http.StatusOK
	for _, v := range checks {
		if !strings.HasPrefix(v, "ok") {
			status, code = "not ready", http.StatusServiceUnavailable
		}
	}
	writeJSON(w, code, map[string]any{"status": status, "checks": checks})
}

// probeWrite creates and removes a file in dir.
func probeWrite(dir string) error {
	f, err := os.CreateTemp(dir, ".readyz-*")
	if err != nil {
		return fmt.Errorf("not writable: %w", err)
	}
	name := f.Name()
	_, err = f.Write([]byte("ok"))
	err = errors.Join(err, f.Close(), os.Remove(name))
	if err != nil {
		return fmt.Errorf("not writable: %w", err)
	}
	return nil
}

// probeAppend opens path for appending, writing nothing.
func probeAppend(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil // created by the first append, in a directory that takes writes
	}
	if err != nil {
		return fmt.Errorf("not writable: %w", err)
	}
	return f.Close()
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// auditOutcome remembers whether the latest audit append failed, for /readyz.
type auditOutcome struct {
	next server.Auditor
	o    *opsEndpoints
}

func (a auditOutcome) Append(ctx context.Context, r audit.Record) error {
	err := a.next.Append(ctx, r)
	if err != nil {
		a.o.auditErr.Store(err.Error())
	} else {
		a.o.auditErr.Store("")
	}
	return err
}

// opsEndpoints makes the endpoints of --metrics (nil over stdio, where
// there is no listener, and with --metrics off) and adds their observers
// to opts.
func (f *serveFlags) opsEndpoints(opts *gatewayOptions) (*opsEndpoints, error) {
	switch f.metricsMode {
	case metricsAuth, metricsOpen:
	case metricsOff:
		return nil, nil // no registry, no collectors
	default:
		return nil, usageErr("--metrics %q: want auth, open or off", f.metricsMode)
	}
	if f.httpAddr == "" {
		return nil, nil // over stdio there is no /metrics: nothing is registered
	}
	ops, err := newOps(f.metricsMode, f.stateDir)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	opts.ops = ops
	opts.server = append(opts.server, server.WithObserver(ops.metrics))
	return ops, nil
}
