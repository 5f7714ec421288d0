package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/promcp/promcp-device/audit"
)

const auditUsage = `Usage:
  promcp-device audit verify --state DIR      check the hash chain; exit 1 naming the first bad record
  promcp-device audit tail [-n N] --state DIR show the latest records
`

func cmdAudit(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "verify" && args[0] != "tail") {
		fmt.Fprint(stderr, auditUsage)
		return 2
	}
	fs := flag.NewFlagSet("audit "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("state", "", "the serve --state `DIR` holding audit.jsonl (required)")
	n := fs.Int("n", 20, "tail: show the last `N` records (0 for all)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *dir == "" || fs.NArg() > 0 {
		fmt.Fprint(stderr, auditUsage)
		return 2
	}
	path := filepath.Join(*dir, auditFile)
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(stderr, "promcp-device audit:", err)
		return 1
	}
	defer f.Close()
	if args[0] == "tail" {
		recs, err := audit.Tail(f, *n)
		if err != nil {
			fmt.Fprintln(stderr, "promcp-device audit tail:", err)
			return 1
		}
		for _, r := range recs {
			fmt.Fprintln(stdout, audit.Format(r))
		}
		return 0
	}
	sum, err := audit.Verify(f)
	if ve, ok := errors.AsType[*audit.VerifyError](err); ok {
		fmt.Fprintf(stdout, "%s: FAILED at %v\n", path, ve)
		return 1
	} else if err != nil {
		fmt.Fprintln(stderr, "promcp-device audit verify:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: ok: %d records, chain intact; last record %d, hash %s\n", path, sum.Records, sum.LastSeq, sum.LastHash)
	return 0
}
