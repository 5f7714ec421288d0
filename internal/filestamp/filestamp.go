// Package filestamp tells whether a file read earlier has changed since:
// the credential files (tokens, console users, a JWKS file) are read again
// on the next check after they change, so a revoked token or a removed key
// stops working without a restart.
package filestamp

import (
	"os"
	"time"
)

// Stamp is what is known of a file when it was read: its modification
// time, its size and the file itself. The file's identity matters: tools
// rewrite these files by renaming a new file over the old one, and a file
// of the same size written within the same clock tick (the kernel's file
// times are as coarse as a few milliseconds) differs from the old one only
// in that. The zero Stamp is the same as no file.
type Stamp struct {
	mod  time.Time
	size int64
	fi   os.FileInfo
}

// Of is the stamp of a file with info fi (from os.Stat or File.Stat).
func Of(fi os.FileInfo) Stamp { return Stamp{mod: fi.ModTime(), size: fi.Size(), fi: fi} }

// Same reports whether a and b stamp the same, unchanged file.
func (a Stamp) Same(b Stamp) bool {
	return a.fi != nil && b.fi != nil && a.mod.Equal(b.mod) && a.size == b.size && os.SameFile(a.fi, b.fi)
}

// Changed stats path and reports whether it must be read again: it
// changed since last, or the last read failed (failed). The error is the
// stat's: a file that is gone.
func Changed(path string, last Stamp, failed bool) (bool, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return true, err
	}
	return failed || !Of(fi).Same(last), nil
}
