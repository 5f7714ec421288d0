// Command listcompare measures tools/list of two promcp-device binaries
// side by side (an earlier build and this one): each serves generated
// greenhouses of 200 and 1,000 capabilities (perf.Manifest) with serve
// --sim, and in each round each server lists every page 10 times over
// streamable HTTP (protocol 2025-11-25, a raw client: the figures are the
// server's and the transfer's, not a client's decoding), the two in
// alternating order. It prints the bytes sent per tool, the p50 of a
// listing of all pages, the server's CPU per listing (/proc/PID/stat)
// and each round's after/before ratio. It is not part of promcp-device.
//
//	go run ./internal/perf/listcompare BEFORE_BINARY AFTER_BINARY
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/promcp/promcp-device/internal/perf"
)

const rounds, listsPerRound = 5, 10

var names = [2]string{"before", "after"}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: listcompare BEFORE_BINARY AFTER_BINARY")
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "listcompare")
	if err != nil {
		fmt.Fprintln(os.Stderr, "listcompare:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	for _, n := range []int{200, 1000} {
		if err := compare(dir, n, [2]string{os.Args[1], os.Args[2]}); err != nil {
			fmt.Fprintln(os.Stderr, "listcompare:", err)
			os.Exit(1)
		}
	}
}

// compare serves a generated manifest of n capabilities with both
// binaries and prints the figures.
func compare(dir string, n int, bins [2]string) error {
	path := filepath.Join(dir, fmt.Sprintf("perf-%d.yml", n))
	if err := os.WriteFile(path, []byte(perf.Manifest(n)), 0o644); err != nil {
		return err
	}
	var srvs [2]*server
	for i, b := range bins {
		s, err := start(b, path)
		if err != nil {
			return fmt.Errorf("%s: %w", b, err)
		}
		defer s.stop()
		srvs[i] = s
	}
	var lat, cpu [2][]float64
	var ratios []float64
	var last [2]listing
	for r := range rounds {
		var med [2]float64
		for _, i := range [][2]int{{0, 1}, {1, 0}}[r%2] {
			c0 := cpuMS(srvs[i].cmd.Process.Pid)
			var l []float64
			for range listsPerRound {
				t0 := time.Now()
				got, err := srvs[i].listAll()
				if err != nil {
					return fmt.Errorf("%s: %w", names[i], err)
				}
				l = append(l, float64(time.Since(t0).Microseconds())/1000)
				last[i] = got
			}
			cpu[i] = append(cpu[i], (cpuMS(srvs[i].cmd.Process.Pid)-c0)/listsPerRound)
			med[i] = median(l)
			lat[i] = append(lat[i], l...)
		}
		ratios = append(ratios, med[1]/med[0])
	}
	for i := range 2 {
		g := last[i]
		fmt.Printf("caps=%d %s: %d tools in %d pages, %d bytes, %.0f B/tool; all pages p50 %.1f ms; server CPU per listing %.1f ms (rounds %.1f..%.1f); %s\n",
			n, names[i], g.tools, g.pages, g.bytes, float64(g.bytes)/float64(g.tools), median(lat[i]),
			median(cpu[i]), slices.Min(cpu[i]), slices.Max(cpu[i]), rss(srvs[i].cmd.Process.Pid))
	}
	slices.Sort(ratios)
	fmt.Printf("caps=%d after/before p50 per round: %s\n", n, strings.Trim(fmt.Sprintf("%.2f", ratios), "[]"))
	return nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// server is a promcp-device serve --sim with a session open.
type server struct {
	cmd     *exec.Cmd
	url     string
	session string
}

func start(bin, manifest string) (*server, error) {
	cmd := exec.Command(bin, "serve", "--sim", "--http", "127.0.0.1:0", "--log-level", "error", "--allow-no-policy", "--manifest", manifest)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd}
	sc := bufio.NewScanner(out)
	for sc.Scan() && s.url == "" {
		s.url = regexp.MustCompile(`http://[^ ]*/mcp`).FindString(sc.Text())
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if s.url == "" {
		s.stop()
		return nil, errors.New("serve printed no URL")
	}
	if _, err := s.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"listcompare","version":"1"}}}`); err != nil {
		s.stop()
		return nil, err
	}
	_, err = s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s, err
}

func (s *server) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

func (s *server) post(body string) ([]byte, error) {
	req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if s.session != "" {
		req.Header.Set("Mcp-Session-Id", s.session)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if id := res.Header.Get("Mcp-Session-Id"); id != "" {
		s.session = id
	}
	return io.ReadAll(res.Body)
}

// listing is one listing of every page: the tools, the bytes of the
// answers, the pages.
type listing struct{ tools, bytes, pages int }

func (s *server) listAll() (listing, error) {
	var l listing
	cursor := ""
	for {
		c, _ := json.Marshal(cursor)
		b, err := s.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":` + string(c) + `}}`)
		if err != nil {
			return l, err
		}
		l.bytes += len(b)
		l.pages++
		var r struct {
			Result struct {
				Tools      []json.RawMessage `json:"tools"`
				NextCursor string            `json:"nextCursor"`
			} `json:"result"`
		}
		if err := json.Unmarshal(bytes.TrimPrefix(b, []byte("data: ")), &r); err != nil {
			return l, fmt.Errorf("tools/list page %d: %w: %.200s", l.pages, err, b)
		}
		l.tools += len(r.Result.Tools)
		if cursor = r.Result.NextCursor; cursor == "" {
			return l, nil
		}
	}
}

// cpuMS is the process's user and system CPU time in milliseconds.
func cpuMS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := bytes.LastIndexByte(b, ')')
	if err != nil || i < 0 || i+2 > len(b) {
		return 0
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 13 {
		return 0
	}
	var user, sys float64
	_, _ = fmt.Sscan(f[11], &user)
	_, _ = fmt.Sscan(f[12], &sys)
	return (user + sys) * 10 // clock ticks of 10 ms (USER_HZ 100)
}

// rss is the process's resident and peak memory.
func rss(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	var out []string
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && (k == "VmRSS" || k == "VmHWM") {
			out = append(out, k+" "+strings.TrimSpace(v))
		}
	}
	return strings.Join(out, ", ")
}
