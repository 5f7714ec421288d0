package server_test

// The do_* contract at its edges: keys compared as bytes, a handler error
// kept for replay as the DoHandler doc says, and a result the store could
// not record answered partial, alike on every retry.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/audit/audittest"
	"github.com/promcp/promcp-device/idempotency"
	"github.com/promcp/promcp-device/idempotency/boltstore"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/server/servertest"
)

// pump is a minimal server with one do_* tool whose handler is act.
type pump struct {
	client *client.Client
	runs   atomic.Int32
}

func newPump(t *testing.T, act func(ctx context.Context, req server.DoRequest) (promcp.DoResult, error), opts ...server.Option) *pump {
	t.Helper()
	p := &pump{}
	srv, err := server.New("pump-station", "1.0", append([]server.Option{server.WithClock(fixedClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Do(server.DoTool{Name: "do_set_pump_speed", Description: "Set the pump speed.",
		Value: map[string]any{"type": "number", "minimum": 0, "maximum": 100}, SideEffects: []string{"flow changes"}},
		func(ctx context.Context, req server.DoRequest) (promcp.DoResult, error) {
			p.runs.Add(1)
			return act(ctx, req)
		}); err != nil {
		t.Fatal(err)
	}
	p.client = servertest.Client(t, srv, mcp.InitializeParams{})
	return p
}

// call sends raw JSON arguments and returns the typed body as sent.
func (p *pump) call(t *testing.T, raw string) (promcp.DoResult, string) {
	t.Helper()
	res, err := p.client.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name: "do_set_pump_speed", Arguments: json.RawMessage(raw)}})
	if err != nil {
		t.Fatalf("do_set_pump_speed(%q): %v", raw, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var r promcp.DoResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("do_set_pump_speed(%q): body %s: %v", raw, b, err)
	}
	return r, string(b)
}

func applied(_ context.Context, req server.DoRequest) (promcp.DoResult, error) {
	return promcp.DoResult{Status: promcp.StatusSuccess, AppliedValue: req.Value}, nil
}

// TestKeysAreComparedAsBytes: invalid UTF-8, raw or as an unpaired \u
// surrogate escape, would be decoded as U+FFFD and make different keys
// equal. It is refused as invalid_argument naming idempotency_key, nothing
// runs, and the mangled key is not echoed. Valid escapes are keys like any.
func TestKeysAreComparedAsBytes(t *testing.T) {
	p := newPump(t, applied, server.WithStore(idempotency.NewMemory(time.Hour, nil), time.Hour))
	for _, key := range []string{"k-\xff", "k-\xfe", `k-\ud800`, `k-\udc00`, `k-\ud800x`, "\xc3\x28"} {
		r, body := p.call(t, `{"value": 10, "idempotency_key": "`+key+`"}`)
		if r.Status != promcp.StatusFailed || r.Error == nil || r.Error.Code != promcp.CodeInvalidArgument || r.Error.Field != "idempotency_key" {
			t.Errorf("key %q: %s; want failed, invalid_argument, field idempotency_key", key, body)
		}
		if strings.ContainsRune(r.IdempotencyKey, '\uFFFD') || strings.Contains(body, `\ufffd`) {
			t.Errorf("key %q: the answer echoes a mangled key: %s", key, body)
		}
	}
	if n := p.runs.Load(); n != 0 {
		t.Fatalf("handler ran %d times for invalid keys, want 0", n)
	}
	// Valid escapes: distinct keys stay distinct, the same key replays.
	for _, key := range []string{`k-\u00e9`, "k-\u00e9x", `k-\ud83d\ude00`, `k-\\u`} {
		if r, body := p.call(t, `{"value": 10, "idempotency_key": "`+key+`"}`); r.Status != promcp.StatusSuccess || r.Replayed {
			t.Errorf("key %q: %s; want success, not replayed", key, body)
		}
	}
	if r, body := p.call(t, `{"value": 10, "idempotency_key": "k-\u00e9"}`); !r.Replayed || r.IdempotencyKey != "k-é" {
		t.Errorf(`key "k-\u00e9" again: %s; want the first answer replayed under k-é`, body)
	}
	// A value that is a string is checked as well (the schema would refuse
	// it anyway, but not as the mangled text).
	if r, body := p.call(t, "{\"value\": \"\xff\", \"idempotency_key\": \"k-v\"}"); r.Error == nil || r.Error.Field != "value" {
		t.Errorf("invalid UTF-8 in value: %s; want field value", body)
	}
}

// TestHandlerErrorIsKeptForReplay: a DoHandler error is answered failed
// with code internal and kept for the key (as the DoHandler doc says): the
// handler may have touched the device, so a retry with the same key
// returns the same failure and does not run it again.
func TestHandlerErrorIsKeptForReplay(t *testing.T) {
	p := newPump(t, func(context.Context, server.DoRequest) (promcp.DoResult, error) {
		return promcp.DoResult{}, errors.New("bus timed out after the write was sent")
	}, server.WithStore(idempotency.NewMemory(time.Hour, nil), time.Hour))
	first, _ := p.call(t, `{"value": 10, "idempotency_key": "k-err"}`)
	if first.Status != promcp.StatusFailed || first.Error == nil || first.Error.Code != promcp.CodeInternal {
		t.Fatalf("handler error answered %+v; want failed, internal", first)
	}
	again, _ := p.call(t, `{"value": 10, "idempotency_key": "k-err"}`)
	if !again.Replayed || again.Error == nil || again.Error.Message != first.Error.Message {
		t.Fatalf("retry answered %+v; want the failure replayed", again)
	}
	if n := p.runs.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want 1", n)
	}
}

// unrecordingStore keeps outcomes in memory but, as a store on a full
// disk does, answers each of them with idempotency.ErrNotRecorded, first
// and on every replay (the Store contract).
type unrecordingStore struct {
	mu   sync.Mutex
	kept map[string][]byte
}

func (s *unrecordingStore) Do(ctx context.Context, key, _ string, act idempotency.Action) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if out, ok := s.kept[key]; ok {
		return out, true, fmt.Errorf("key %q: %w", key, idempotency.ErrNotRecorded)
	}
	out, keep, err := act(ctx, idempotency.Attempt{})
	if err != nil || !keep {
		return out, false, err
	}
	s.kept[key] = out
	return out, false, fmt.Errorf("key %q: %w: %w", key, idempotency.ErrNotRecorded, syscall.ENOSPC)
}

// TestUnrecordedResultIsPartialAlike: a result the store could not record
// is answered partial (the device was touched, and the record of it is not
// safe), and a retry with the same key returns the same body, replayed,
// not "partial, recovered", without running the handler again.
func TestUnrecordedResultIsPartialAlike(t *testing.T) {
	p := newPump(t, applied, server.WithStore(&unrecordingStore{kept: map[string][]byte{}}, time.Hour))
	checkUnrecorded(t, p)
}

// TestUnrecordedResultOnFullTmpfs is the same with the real bbolt store on
// a 512 KiB tmpfs that the handler fills while it "moves the pump"; the
// handler's result is large (a long reason) so that bbolt's commit needs
// pages it cannot find. Needs root to mount.
func TestUnrecordedResultOnFullTmpfs(t *testing.T) {
	dir := audittest.Tmpfs(t, "512k")
	st, err := boltstore.OpenBolt(filepath.Join(dir, "idempotency.db"), time.Second, boltstore.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() }) // before the unmount: cleanups run last first
	long := strings.Repeat("the pump's controller reports a long story; ", 1500)
	p := newPump(t, func(_ context.Context, req server.DoRequest) (promcp.DoResult, error) {
		if err := audittest.Fill(filepath.Join(dir, "filler")); err != nil {
			return promcp.DoResult{}, err
		}
		return promcp.DoResult{Status: promcp.StatusSuccess, AppliedValue: req.Value, Reason: long}, nil
	}, server.WithStore(st, time.Hour))
	checkUnrecorded(t, p)
}

func checkUnrecorded(t *testing.T, p *pump) {
	t.Helper()
	first, firstBody := p.call(t, `{"value": 10, "idempotency_key": "k-full"}`)
	if first.Status != promcp.StatusPartial || first.Replayed || first.Recovered || first.AppliedValue != 10.0 ||
		!strings.Contains(first.Reason, "could not be saved to the state disk") {
		t.Fatalf("unrecorded result answered %.300s; want partial, applied 10, saying it was not saved", firstBody)
	}
	for range 2 {
		again, body := p.call(t, `{"value": 10, "idempotency_key": "k-full"}`)
		if !again.Replayed || again.Recovered {
			t.Fatalf("retry answered %.300s; want replayed, not recovered", body)
		}
		again.Replayed = false
		if a, _ := json.Marshal(again); string(a) != mustJSON(t, first) {
			t.Fatalf("retry body differs from the first answer:\n%.300s\n%.300s", a, firstBody)
		}
	}
	if n := p.runs.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want 1", n)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
