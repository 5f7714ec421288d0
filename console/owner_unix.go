//go:build unix

package console

import (
	"fmt"
	"os"
	"syscall"
)

// keepOwner gives the file f the owner of the file fi describes, so that a
// users file rewritten by root stays readable by the gateway's user.
func keepOwner(f *os.File, fi os.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || (int(st.Uid) == os.Getuid() && int(st.Gid) == os.Getgid()) {
		return nil
	}
	if err := f.Chown(int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("keeping the owner %d:%d of the users file (run as its owner or root): %w", st.Uid, st.Gid, err)
	}
	return nil
}
