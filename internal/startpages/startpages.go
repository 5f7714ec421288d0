// Package startpages lets a long-running process give back the pages of
// its own executable that only start-up touched.
//
// Every linked package's init runs before main, and the kernel maps the
// executable's pages around each fault (64 KB at a time), so after start
// nearly the whole text and much of the function tables are resident,
// although serving touches a fraction of them: for the greenhouse gateway,
// 18 of its 19 MB file-backed resident set. These pages are clean copies of
// the file; Release unmaps them from this process, and the ones still used
// come back on their first touch from the page cache (a minor fault, no
// read from the disk while the file stays cached).
package startpages

// Stats is what Release did.
type Stats struct {
	Mappings int   // read-only mappings of the executable released
	Bytes    int64 // their size (mapped, not necessarily resident before)
	Skipped  int   // mappings left alone: writable, or with private (copied) pages
}
