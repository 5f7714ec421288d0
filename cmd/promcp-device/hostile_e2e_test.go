package main

// The HTTP server under hostile load, on the real binary: slow bodies
// without a token, sessions opened and never deleted, GET floods with
// made-up session ids, while an authenticated client keeps working. The
// load is bounded in count and time and stays on 127.0.0.1.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/server"
)

// The load, and what the server may use under it.
const (
	slowBodies    = 300      // connections without a token, each sending all but the last bytes of a body
	slowBodySize  = 1 << 20  // the body each announces
	sessionFlood  = 2000     // initialize requests with a token, sessions never deleted
	getFlood      = 1000     // GET streams with a token and made-up session ids, held open
	rssBoundBytes = 64 << 20 // the server's peak RSS under all of it (a Raspberry Pi's headroom)

	// The attacks end once the server has answered every request, however
	// long a loaded machine takes; attackBound only bounds a server that
	// never answers, and a legitimate call waits at most callBound.
	attackBound = 5 * time.Minute
	callBound   = time.Minute
	// slowHold: a slow body not answered and closed this long after it was
	// sent is held open. The server refuses a body without a token on its
	// headers; one that waited for the body would hold it until its read
	// timeout (server.DefaultReadTimeout, 30 s), past slowHold.
	slowHold = server.DefaultReadTimeout * 2 / 3
)

// buildPlain builds the binary without the race detector, whose shadow
// memory would swamp what the test measures; the binary under test is
// plain already when the tests run without it.
var buildPlain = sync.OnceValues(func() (string, error) {
	if !raceEnabled {
		return binary, nil
	}
	bin := filepath.Join(filepath.Dir(binary), "promcp-device-plain")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// loadResult is what one run of the load saw.
type loadResult struct {
	rssIdle, rssPeak, rssAfter  int64 // bytes
	slowRefused, slowHeld       int   // slow-body connections answered and closed, and still open at the end of the window
	sessionsOpened, sessions429 int
	sessionsOpenAfter           float64 // promcp_mcp_sessions once the attacks are over
	get404, getOpen, getOther   int
	legitCalls                  int
	legitErrors                 []string
	elapsed                     time.Duration
}

func (r loadResult) String() string {
	return fmt.Sprintf("RSS idle %.1f MB, peak %.1f MB, after %.1f MB; slow bodies: %d refused and closed, %d held open; "+
		"sessions: %d opened, %d refused (429), %.0f open after; GET floods: %d 404, %d streams open, %d other; authenticated calls: %d ok, %d failed; %v",
		mib(r.rssIdle), mib(r.rssPeak), mib(r.rssAfter), r.slowRefused, r.slowHeld, r.sessionsOpened, r.sessions429, r.sessionsOpenAfter,
		r.get404, r.getOpen, r.getOther, r.legitCalls, len(r.legitErrors), r.elapsed.Round(100*time.Millisecond))
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func TestHTTPHostileLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the hostile load takes about half a minute")
	}
	bin, err := buildPlain()
	if err != nil {
		t.Fatal(err)
	}
	res := hostileLoad(t, bin)
	t.Logf("this build: %v", res)
	if res.rssPeak > rssBoundBytes {
		t.Errorf("peak RSS %.1f MB under the load, want under %.0f MB", mib(res.rssPeak), mib(rssBoundBytes))
	}
	if res.slowHeld != 0 || res.slowRefused != slowBodies {
		t.Errorf("slow bodies without a token: %d refused and closed, %d held open; want all %d refused and closed", res.slowRefused, res.slowHeld, slowBodies)
	}
	// A new session takes the place of the token's least recently used
	// idle one: every initialize is served, and the token never holds more
	// than its cap (the operator's client adds at most 2).
	if capped := server.DefaultMaxSessionsPerCaller; res.sessionsOpened != sessionFlood || res.sessions429 != 0 || res.sessionsOpenAfter > float64(capped+2) {
		t.Errorf("session flood with one token: %d opened, %d refused, %.0f open after; want all %d opened, none refused, at most %d open (the per-token cap)",
			res.sessionsOpened, res.sessions429, res.sessionsOpenAfter, sessionFlood, capped)
	}
	if res.get404 != getFlood {
		t.Errorf("GET flood with made-up session ids: %d 404, %d open, %d other; want all %d 404", res.get404, res.getOpen, res.getOther, getFlood)
	}
	if len(res.legitErrors) > 0 || res.legitCalls < 5 {
		t.Errorf("the authenticated client under the load: %d calls ok, errors %v; want at least 5 while the attacks ran, and none failed", res.legitCalls, res.legitErrors)
	}
	// PROMCP_BASELINE_BIN names another build (say the one before these
	// limits) to put under the same load, for comparison.
	if base := os.Getenv("PROMCP_BASELINE_BIN"); base != "" {
		b := hostileLoad(t, base)
		t.Logf("baseline %s: %v", base, b)
		t.Logf("peak RSS: baseline %.1f MB / this build %.1f MB = %.1fx", mib(b.rssPeak), mib(res.rssPeak), float64(b.rssPeak)/float64(res.rssPeak))
	}
}

// hostileLoad starts bin and runs the three attacks at once while an
// operator's client calls tools, sampling the server's RSS.
func hostileLoad(t *testing.T, bin string) loadResult {
	t.Helper()
	file, operator, viewer := tokensFile(t)
	// The attacks and the machine's load hold the simulated dimmer's
	// transactions up: patientLabBench, so that a legitimate call fails
	// for what the server does, not for the CPU it is given.
	pid, url := startBinary(t, bin, "serve", "--sim", "--manifest", patientLabBench(t), "--tokens", file,
		"--http", "127.0.0.1:0", "--log-level", "error")
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")

	legit := mcpClient(t, url, operator)
	if _, err := callDo(legit, t, "warm-up", 10); err != nil {
		t.Fatalf("before the load: %v", err)
	}
	var res loadResult
	res.rssIdle = rss(t, pid)
	start := time.Now()

	ctx, cancel := context.WithTimeout(t.Context(), attackBound)
	defer cancel()
	var peak atomic.Int64
	sampled := make(chan struct{})
	go func() { // sample the RSS until the attacks are over
		defer close(sampled)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if r := rss(t, pid); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()

	var attacks sync.WaitGroup
	var mu sync.Mutex
	attacks.Go(func() {
		refused, held := slowBodyAttack(ctx, addr)
		mu.Lock()
		res.slowRefused, res.slowHeld = refused, held
		mu.Unlock()
	})
	attacks.Go(func() {
		opened, refused := sessionAttack(ctx, url, viewer)
		mu.Lock()
		res.sessionsOpened, res.sessions429 = opened, refused
		mu.Unlock()
	})
	attacks.Go(func() {
		n404, open, other := getAttack(ctx, url, viewer)
		mu.Lock()
		res.get404, res.getOpen, res.getOther = n404, open, other
		mu.Unlock()
	})
	attacksDone := make(chan struct{})
	legitDone := make(chan struct{})
	go func() { // the operator keeps working while the attacks last, and opens a new session
		defer close(legitDone)
		c := legit
		for i := 0; ; i++ {
			select {
			case <-attacksDone:
				return
			default:
			}
			if i == 3 {
				c2, err := dialHTTP(url, "", operator)
				if err != nil {
					res.legitErrors = append(res.legitErrors, "a new session under the load: "+err.Error())
					return
				}
				defer c2.Close()
				c = c2
			}
			cctx, ccancel := context.WithTimeout(context.Background(), callBound)
			r, err := c.CallTool(cctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "do_set_light_level",
				Arguments: map[string]any{"value": float64(i % 100), "idempotency_key": "load-" + strconv.Itoa(i)}}})
			ccancel()
			if err != nil || r.IsError {
				res.legitErrors = append(res.legitErrors, fmt.Sprintf("call %d: %v %v", i, err, r))
				continue
			}
			res.legitCalls++
		}
	}()
	attacks.Wait()
	close(attacksDone)
	<-legitDone
	cancel()
	<-sampled
	res.elapsed = time.Since(start)
	if v, ok := value(scrape(t, strings.TrimSuffix(url, "/mcp"), operator), "promcp_mcp_sessions"); ok {
		res.sessionsOpenAfter = v
	} else {
		res.sessionsOpenAfter = -1
	}
	res.rssAfter = rss(t, pid)
	res.rssPeak = max(peak.Load(), res.rssAfter)
	return res
}

// slowBodyAttack opens slowBodies connections without a token; each sends
// the headers of a slowBodySize body and all of it but the last 16 bytes,
// then waits. It counts the connections answered and closed, and those
// still open slowHold after they were sent.
func slowBodyAttack(ctx context.Context, addr string) (refused, held int) {
	var wg sync.WaitGroup
	var nRefused, nHeld atomic.Int64
	body := make([]byte, slowBodySize-16)
	for range slowBodies {
		wg.Go(func() {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(slowHold))
			fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", addr, slowBodySize)
			conn.Write(body) // fails if the server closes first
			br := bufio.NewReader(conn)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				if isTimeout(err) {
					nHeld.Add(1)
				} else { // closed on us (a reset may drop the answer)
					nRefused.Add(1)
				}
				return
			}
			io.Copy(io.Discard, res.Body)
			if res.StatusCode/100 == 2 {
				return
			}
			// Answered: is the connection closed, or left waiting for the rest?
			if _, err := br.ReadByte(); isTimeout(err) {
				nHeld.Add(1)
			} else if err != nil {
				nRefused.Add(1)
			}
		})
	}
	wg.Wait()
	return int(nRefused.Load()), int(nHeld.Load())
}

// sessionAttack initializes sessionFlood sessions with token and never
// deletes them.
func sessionAttack(ctx context.Context, url, token string) (opened, refused int) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer hc.CloseIdleConnections()
	var nOpened, nRefused atomic.Int64
	work := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range work {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(initBody))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Authorization", "Bearer "+token)
				res, err := hc.Do(req)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				switch {
				case res.StatusCode == http.StatusOK && res.Header.Get("Mcp-Session-Id") != "":
					nOpened.Add(1)
				case res.StatusCode == http.StatusTooManyRequests:
					nRefused.Add(1)
				}
			}
		})
	}
	for range sessionFlood {
		select {
		case work <- struct{}{}:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	return int(nOpened.Load()), int(nRefused.Load())
}

// getAttack opens getFlood GET streams with token and made-up session ids,
// holding open the ones the server accepts until it has answered them all
// (or ctx ends).
func getAttack(ctx context.Context, url, token string) (n404, open, other int) {
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var c404, cOpen, cOther atomic.Int64
	var wg, answered sync.WaitGroup
	hold, release := context.WithCancel(ctx)
	defer release()
	answered.Add(getFlood)
	go func() { answered.Wait(); release() }()
	for range getFlood {
		wg.Go(func() {
			var id [16]byte
			rand.Read(id[:])
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Mcp-Session-Id", "mcp-session-"+hex.EncodeToString(id[:]))
			res, err := hc.Do(req)
			switch {
			case err != nil:
				cOther.Add(1)
			case res.StatusCode == http.StatusNotFound:
				c404.Add(1)
			case res.StatusCode == http.StatusOK:
				cOpen.Add(1)
			default:
				cOther.Add(1)
			}
			answered.Done()
			if err == nil {
				<-hold.Done() // hold the stream (an accepted one) until all are answered
				res.Body.Close()
			}
		})
	}
	wg.Wait()
	return int(c404.Load()), int(cOpen.Load()), int(cOther.Load())
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// rss reads the resident set size of process pid.
func rss(t *testing.T, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Errorf("reading the server's RSS: %v", err)
		return 0
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(data)
	if m == nil {
		t.Errorf("no VmRSS in /proc/%d/status", pid)
		return 0
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

// startBinary runs bin with args until the test ends and returns its pid
// and the URL it prints.
func startBinary(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	cmd, url := launch(t, os.Kill, nil, bin, `on (http://\S+/mcp)`, args...)
	if url == "" {
		t.Fatalf("%s %v printed no URL", bin, args)
	}
	return cmd.Process.Pid, url
}

// TestHTTPLimitFlags: the session flags reach the server, and bad values
// are refused at start-up.
func TestHTTPLimitFlags(t *testing.T) {
	file, operator, _ := tokensFile(t)
	url := startServe(t, "--manifest", labBench, "--tokens", file, "--max-sessions-per-token", "2").url
	// The third session takes the place of the first, idle: its next
	// request is 404 while the second's is served.
	var sids []string
	for range 3 {
		sid, code := rawSession(t, url, operator)
		if sid == "" {
			t.Fatalf("initialize with --max-sessions-per-token 2: status %d, want 200", code)
		}
		sids = append(sids, sid)
	}
	for i, want := range []int{http.StatusNotFound, http.StatusOK} {
		if code, text := rawPost(t, url, operator, sids[i], `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); code != want {
			t.Fatalf("session %d of 3 with --max-sessions-per-token 2: status %d (%.100s), want %d", i+1, code, text, want)
		}
	}
	for _, bad := range [][]string{{"--max-sessions", "0"}, {"--max-sessions-per-token", "-1"}, {"--max-conns", "0"}, {"--session-idle", "0s"}, {"--job-retention", "0s"}} {
		_, stderr, code := runCLI(t, append([]string{"serve", "--sim", "--manifest", labBench, "--http", "127.0.0.1:0"}, bad...)...)
		if code != 2 || !strings.Contains(stderr, bad[0]+" must be more than 0") {
			t.Errorf("serve %v: exit %d, %q; want exit 2 naming the flag", bad, code, stderr)
		}
	}
}

// TestHTTPStartUpTruths: "serving" is printed once the listener is up and
// its certificate loaded, never before a failure; tokens over plain HTTP
// on a non-loopback address are warned about, and on loopback they are not.
func TestHTTPStartUpTruths(t *testing.T) {
	file, _, _ := tokensFile(t)
	bogus := filepath.Join(t.TempDir(), "bogus.pem")
	os.WriteFile(bogus, []byte("not a certificate"), 0o600)
	stdout, stderr, code := runCLI(t, "serve", "--sim", "--manifest", labBench, "--http", "127.0.0.1:0", "--tls-cert", bogus, "--tls-key", bogus)
	if code != 1 || strings.Contains(stdout, "serving") || !strings.Contains(stderr, "--tls-cert") {
		t.Fatalf("serve with a bad certificate: exit %d, stdout %q, stderr %q; want exit 1, nothing printed as serving, the flag named", code, stdout, stderr)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	stdout, _, code = runCLI(t, "serve", "--sim", "--manifest", labBench, "--http", ln.Addr().String())
	if code != 1 || strings.Contains(stdout, "serving") {
		t.Fatalf("serve on a port in use: exit %d, stdout %q; want exit 1 and nothing printed as serving", code, stdout)
	}

	for _, tc := range []struct {
		addr string
		warn bool
	}{{"0.0.0.0:0", true}, {"127.0.0.1:0", false}} {
		log, logged := logFile(t)
		cmd := exec.Command(binary, "serve", "--sim", "--manifest", labBench, "--tokens", file, "--http", tc.addr)
		t.Cleanup(func() { stopProc(t, cmd, os.Kill) })
		cmd.Stderr = log
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		lines.Scan() // the "serving" line: everything logged before it is in the file
		stopProc(t, cmd, os.Kill)
		if warned := strings.Contains(logged(), "clear text"); warned != tc.warn || !strings.Contains(lines.Text(), "serving") {
			t.Errorf("serve --tokens --http %s: printed %q, warned %v (%s); want serving, and a warning %v", tc.addr, lines.Text(), warned, logged(), tc.warn)
		}
	}
}
