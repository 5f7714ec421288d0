package server

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/clock"
)

// TestSessionWithCallInFlightIsNotEvicted: at a cap, a session with a
// request not yet answered is never the one that makes room; once it is
// answered, it may be.
func TestSessionWithCallInFlightIsNotEvicted(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	tab := newSessionTable(SessionLimits{Total: 10, PerCaller: 1}, clk.Now)
	var ended []string
	tab.expire = func(id, _, why string) { ended = append(ended, id+" "+why) }
	open := func() (string, error) {
		res, err := tab.reserve("alice", "/mcp")
		if err != nil {
			return "", err
		}
		return boundSessions{t: tab, res: res}.Generate(), nil
	}
	id, err := open()
	if err != nil {
		t.Fatal(err)
	}
	end := tab.begin(id, "alice", "/mcp", true)
	clk.Advance(time.Hour) // idle for long, but its call is in flight
	if _, err := open(); !errors.Is(err, errTooManyCallerSessions) {
		t.Fatalf("a second session at a cap of 1, the first with a call in flight: %v, want %v", err, errTooManyCallerSessions)
	}
	if !tab.lookup(id, "alice", "/mcp") {
		t.Fatal("the session with a call in flight was ended")
	}
	end()
	if _, err := open(); err != nil {
		t.Fatalf("a second session once the call is answered: %v, want the first evicted", err)
	}
	if tab.lookup(id, "alice", "/mcp") || len(ended) != 1 || ended[0] != id+" evicted: a new session needed its slot" {
		t.Fatalf("after the eviction: first session live %v, ended %q", tab.lookup(id, "alice", "/mcp"), ended)
	}
}

// TestLongString: the scan for an over-long key finds it whatever the
// spacing, skips escaped quotes, and passes keys within the limit and
// other members of the same length.
func TestLongString(t *testing.T) {
	long := `"` + strings.Repeat("k", 50) + `"`
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"idempotency_key":` + long + `}`, true},
		{`{"idempotency_key" :` + "\n\t" + long + `}`, true},
		{`{"idempotency_key":"` + strings.Repeat(`\"`, 30) + `"}`, true}, // 60 bytes of JSON text
		{`{"idempotency_key":"short","other":` + long + `}`, false},
		{`{"note":"idempotency_key","x":` + long + `}`, false}, // the name as a value, not a member
		{`{"idempotency_key":"` + strings.Repeat(`\"`, 20) + `"}`, false},
		{`{"idempotency_key":"unterminated`, false},
	} {
		if _, got := longString([]byte(tc.body), "idempotency_key", 40); got != tc.want {
			t.Errorf("longString(%.60s…) = %v, want %v", tc.body, got, tc.want)
		}
	}
}
