package console

import (
	"net"
	"sync"
	"time"
)

// Failed logins are limited per remote address: after loginFailures
// failures within loginWindow of the first one, the address is answered
// 429 until that window ends. At most loginAddrs addresses are tracked at
// once, so a spray of source addresses cannot grow memory: beyond it the
// expired windows are dropped, then the one with the fewest attempts.
const (
	loginFailures = 5
	loginWindow   = time.Minute
	loginAddrs    = 1024
)

// loginLimiter counts the login attempts of each remote IP in a fixed
// window that opens at its first attempt.
type loginLimiter struct {
	limit  int           // attempts per window
	window time.Duration // from an address's first attempt
	addrs  int           // addresses held at most

	mu sync.Mutex
	by map[string]*attempts
}

type attempts struct {
	n      int       // attempts in the window not followed by a success
	start  time.Time // when the window opened
	warned bool      // the limit was logged for this window
}

func newLoginLimiter(limit int, window time.Duration, addrs int) *loginLimiter {
	return &loginLimiter{limit: limit, window: window, addrs: addrs, by: map[string]*attempts{}}
}

// remoteIP is the key of a request's remote address: its IP without the
// port, which changes with every connection.
func remoteIP(remoteAddr string) string {
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return h
	}
	return remoteAddr
}

// begin counts an attempt of ip at now, before its token is checked, so
// that concurrent attempts cannot overrun the limit. When ip has used up
// its window it returns false with how long until the window ends, and
// first is true for the first refusal of that window (the one to log).
func (l *loginLimiter) begin(ip string, now time.Time) (ok bool, retry time.Duration, first bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.by[ip]
	if a != nil && !now.Before(a.start.Add(l.window)) {
		delete(l.by, ip)
		a = nil
	}
	if a == nil {
		l.makeRoomLocked(now)
		a = &attempts{start: now}
		l.by[ip] = a
	}
	if a.n >= l.limit {
		first = !a.warned
		a.warned = true
		return false, a.start.Add(l.window).Sub(now), first
	}
	a.n++
	return true, 0, false
}

// succeeded forgets the attempts of ip: a person who mistyped and then
// logged in starts afresh.
func (l *loginLimiter) succeeded(ip string) {
	l.mu.Lock()
	delete(l.by, ip)
	l.mu.Unlock()
}

// makeRoomLocked keeps the map under its cap before an address is added:
// it drops the expired windows and, if none has expired, the one with the
// fewest attempts (the oldest of them), so that a spray of new addresses
// evicts its own kind before an address that has used up its window.
func (l *loginLimiter) makeRoomLocked(now time.Time) {
	if len(l.by) < l.addrs {
		return
	}
	var victim string
	var least *attempts
	for ip, a := range l.by {
		if !now.Before(a.start.Add(l.window)) {
			delete(l.by, ip)
			continue
		}
		if least == nil || a.n < least.n || a.n == least.n && a.start.Before(least.start) {
			victim, least = ip, a
		}
	}
	if len(l.by) >= l.addrs {
		delete(l.by, victim)
	}
}

// tracked is the number of addresses held.
func (l *loginLimiter) tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.by)
}
