//go:build linux

package startpages

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Release unmaps the pages of the executable's read-only mappings (its
// text, read-only data and function tables) from this process with
// madvise(MADV_DONTNEED). A mapping that is writable, or that holds a
// private copy of any page (a debugger's breakpoint), is left alone: only
// clean pages, which the kernel reads again from the file, are dropped.
func Release() (Stats, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return Stats{}, fmt.Errorf("startpages: %w", err)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return Stats{}, fmt.Errorf("startpages: %w", err)
	}
	var st Stats
	for _, m := range parseSmaps(smaps) {
		if m.path != exe {
			continue
		}
		if strings.Contains(m.perms, "w") || m.anon > 0 {
			st.Skipped++
			continue
		}
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, m.lo, m.hi-m.lo, syscall.MADV_DONTNEED); e != 0 {
			return st, fmt.Errorf("startpages: madvise %x-%x: %w", m.lo, m.hi, e)
		}
		st.Mappings++
		st.Bytes += int64(m.hi - m.lo)
	}
	return st, nil
}

type mapping struct {
	lo, hi uintptr
	perms  string
	path   string
	anon   int64 // kB of anonymous (private, copied) pages in the mapping
}

// parseSmaps reads the mappings of /proc/self/smaps with their Anonymous
// size; lines it does not know are skipped.
func parseSmaps(b []byte) []mapping {
	var ms []mapping
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			lo, hi, ok := strings.Cut(f[0], "-")
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if !ok || err1 != nil || err2 != nil {
				continue
			}
			m := mapping{lo: uintptr(l), hi: uintptr(h), perms: f[1]}
			if len(f) >= 6 {
				m.path = strings.Join(f[5:], " ")
			}
			ms = append(ms, m)
			continue
		}
		if len(ms) > 0 && len(f) >= 2 && f[0] == "Anonymous:" {
			ms[len(ms)-1].anon, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	return ms
}
