//go:build unix

package fileowner

import (
	"os"
	"syscall"
	"testing"
)

func ownerOf(t *testing.T, fi os.FileInfo) (uid, gid int) {
	t.Helper()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatal("no syscall.Stat_t")
	}
	return int(st.Uid), int(st.Gid)
}
