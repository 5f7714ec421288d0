package console

import (
	"fmt"
	"testing"
	"time"
)

// Under a spray of 10,000 addresses the limiter holds at most loginAddrs
// of them, and keeps the one that used up its window.
func TestLoginLimiterBoundedUnderSpray(t *testing.T) {
	l := newLoginLimiter(loginFailures, loginWindow, loginAddrs)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for range loginFailures {
		l.begin("192.0.2.7", now)
	}
	for i := range 10000 {
		l.begin(fmt.Sprintf("10.0.%d.%d", i>>8, i&255), now.Add(time.Duration(i)*time.Millisecond))
		if n := l.tracked(); n > loginAddrs {
			t.Fatalf("after %d sprayed addresses the limiter holds %d, want at most %d", i+1, n, loginAddrs)
		}
	}
	if ok, retry, _ := l.begin("192.0.2.7", now.Add(10*time.Second)); ok || retry != 50*time.Second {
		t.Fatalf("the limited address after the spray: ok %v, retry %v; want refused for 50 s more", ok, retry)
	}
	// A minute on, every window has expired: the next address clears them.
	l.begin("192.0.2.10", now.Add(2*time.Minute))
	if n := l.tracked(); n != 1 {
		t.Fatalf("two minutes later, one new address: %d held, want 1", n)
	}
}

func TestRemoteIP(t *testing.T) {
	for in, want := range map[string]string{"192.0.2.7:40001": "192.0.2.7", "[2001:db8::1]:443": "2001:db8::1", "pipe": "pipe"} {
		if got := remoteIP(in); got != want {
			t.Errorf("remoteIP(%q) = %q, want %q", in, got, want)
		}
	}
}
