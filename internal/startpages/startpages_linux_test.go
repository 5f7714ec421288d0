//go:build linux

package startpages

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// rssFile is RssFile of /proc/self/status in kB.
func rssFile(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}

// TestRelease: the test binary's read-only mappings are released, its
// writable one is left alone, the process goes on running the code it
// released (this test), and its file-backed resident set shrinks.
func TestRelease(t *testing.T) {
	before := rssFile(t)
	st, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	after := rssFile(t)
	t.Logf("released %+v; RssFile %d kB -> %d kB", st, before, after)
	if st.Mappings < 1 || st.Bytes <= 0 {
		t.Errorf("released %+v, want the executable's read-only mappings", st)
	}
	if st.Skipped < 1 {
		t.Errorf("released %+v, want its writable mapping skipped", st)
	}
	if after >= before {
		t.Errorf("RssFile %d kB after Release, %d kB before: want less", after, before)
	}
	// What was released still runs and reads the same.
	if _, err := Release(); err != nil {
		t.Fatal(err)
	}
}

func TestParseSmaps(t *testing.T) {
	in := `00400000-00c00000 r-xp 00000000 fe:01 123 /usr/bin/promcp device
Size:               8192 kB
Anonymous:             0 kB
00c00000-01000000 r--p 00800000 fe:01 123 /usr/bin/promcp device
Anonymous:             4 kB
VmFlags: rd mr mw me
01000000-01100000 rw-p 00c00000 fe:01 123 /usr/bin/promcp device
Anonymous:            12 kB
7f0000000000-7f0000001000 rw-p 00000000 00:00 0
Anonymous:             4 kB
`
	ms := parseSmaps([]byte(in))
	if len(ms) != 4 {
		t.Fatalf("%d mappings, want 4: %+v", len(ms), ms)
	}
	want := []mapping{
		{lo: 0x400000, hi: 0xc00000, perms: "r-xp", path: "/usr/bin/promcp device"},
		{lo: 0xc00000, hi: 0x1000000, perms: "r--p", path: "/usr/bin/promcp device", anon: 4},
		{lo: 0x1000000, hi: 0x1100000, perms: "rw-p", path: "/usr/bin/promcp device", anon: 12},
		{lo: 0x7f0000000000, hi: 0x7f0000001000, perms: "rw-p", anon: 4},
	}
	for i := range want {
		if ms[i] != want[i] {
			t.Errorf("mapping %d = %+v, want %+v", i, ms[i], want[i])
		}
	}
}
