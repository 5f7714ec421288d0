//go:build unix

// Package fileowner keeps a rewritten file's owner: a file replaced by a
// command run as root (a new temporary file renamed over the old one)
// stays readable by the gateway's own user.
package fileowner

import (
	"fmt"
	"os"
	"syscall"
)

// Keep gives the file f the owner of the file fi describes (the one f
// replaces); what names that file in the error ("the tokens file"). It
// does nothing when the owner is already the process's.
func Keep(f *os.File, fi os.FileInfo, what string) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || (int(st.Uid) == os.Getuid() && int(st.Gid) == os.Getgid()) {
		return nil
	}
	if err := f.Chown(int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("keeping the owner %d:%d of %s (run as its owner or root): %w", st.Uid, st.Gid, what, err)
	}
	return nil
}
