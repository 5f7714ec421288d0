package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/promcp/promcp-device/audit"
)

const auditUsage = `Usage:
  promcp-device audit verify --state DIR [--log FILE] [--audit-key FILE] [--checkpoint FILE] [--unkeyed]
                                    check the keyed chain across rotated files (and against a
                                    checkpoint kept elsewhere); exit 1 naming the first bad record
  promcp-device audit checkpoint --state DIR [--audit-key FILE]
                                    verify, then print the last record's number and hash as one
                                    JSON line to keep off the gateway (syslog, another host)
  promcp-device audit tail [-n N] --state DIR [--log FILE]
                                    show the latest records, control characters escaped
  promcp-device audit tail --fleet --nats URL [--hub-domain D] [-n N]
                                    show the latest records of every gateway of a fleet, from
                                    the hub's FLEET_AUDIT stream, each led by its gateway
`

// auditKeyFile is the default key file in --state DIR. It is a separate
// file from the log: the log may be copied and shipped, the key stays.
const auditKeyFile = "audit.key"

// auditConfig is how serve opens the audit log (its --audit-* flags).
type auditConfig struct {
	key           string        // key file; "" for DIR/audit.key
	rotateSize    int64         // bytes; 0: never by size
	rotateAge     time.Duration // 0: never by age
	retentionDays int           // 0: keep every rotated file

	// onWrite, with --fleet on an edge, forwards each written record to
	// the gateway's fleet audit stream (fleet/shared.Forwarder).
	onWrite func(lines []byte)
}

// auditFlags declares serve's --audit-* flags.
func auditFlags(fs *flag.FlagSet) *auditConfig {
	c := &auditConfig{}
	fs.StringVar(&c.key, "audit-key", "", "with --state: the audit chain's HMAC key `FILE` (default DIR/audit.key; created 0600 when missing, refused if group or others may read it)")
	fs.Int64Var(&c.rotateSize, "audit-rotate-size", 16<<20, "with --state: rotate the audit log when it would pass `BYTES` (0: never)")
	fs.DurationVar(&c.rotateAge, "audit-rotate-age", 24*time.Hour, "with --state: rotate the audit log when its first record is this `AGE` (0: never)")
	fs.IntVar(&c.retentionDays, "audit-retention-days", 0, "with --state: delete rotated audit files last written more than `N` days ago (0: keep all)")
	return c
}

func (c *auditConfig) keyPath(dir string) string {
	if c.key != "" {
		return c.key
	}
	return filepath.Join(dir, auditKeyFile)
}

// openAuditLog opens DIR/audit.jsonl keyed with c's key file (created if
// missing).
func openAuditLog(dir string, c *auditConfig, log *slog.Logger) (*audit.Log, error) {
	if c == nil {
		c = &auditConfig{}
	}
	if c.rotateSize < 0 || c.rotateAge < 0 || c.retentionDays < 0 {
		return nil, errors.New("--audit-rotate-size, --audit-rotate-age and --audit-retention-days must not be negative")
	}
	key, err := audit.LoadOrCreateKey(c.keyPath(dir))
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, auditFile)
	l, err := audit.OpenWith(path, audit.Options{
		Key:       key,
		MaxSize:   c.rotateSize,
		MaxAge:    c.rotateAge,
		Retention: time.Duration(c.retentionDays) * 24 * time.Hour,
		Log:       log,
		OnWrite:   c.onWrite,
	})
	if err != nil {
		return nil, err
	}
	log.Info("audit log", "file", path, "key", c.keyPath(dir), "rotate_size", c.rotateSize, "rotate_age", c.rotateAge.String(),
		"retention_days", c.retentionDays, "refusals_per_caller", fmt.Sprintf("%d, then 1 per %s", audit.DefaultRefusalBurst, audit.DefaultRefusalEvery))
	return l, nil
}

func cmdAudit(c *cli) int {
	args, stdout, stderr := c.args, c.stdout, c.stderr
	if len(args) == 0 || (args[0] != "verify" && args[0] != "tail" && args[0] != "checkpoint") {
		fmt.Fprint(stderr, auditUsage)
		return 2
	}
	fs := c.sub()
	dir := fs.String("state", "", "the serve --state `DIR` holding audit.jsonl (required)")
	n := fs.Int("n", 20, "tail: show the last `N` records (0 for all)")
	keyFile := fs.String("audit-key", "", "verify, checkpoint: the chain's key `FILE` (default DIR/audit.key)")
	cpFile := fs.String("checkpoint", "", "verify: fail unless the log still reaches the newest checkpoint in `FILE` (lines of audit checkpoint output)")
	unkeyed := fs.Bool("unkeyed", false, "verify: the log is a plain SHA-256 chain (written before keyed chains, or moved aside as audit.jsonl.unkeyed-*)")
	logFile := fs.String("log", "", "the log `FILE` instead of DIR/audit.jsonl (for instance an audit.jsonl.unkeyed-* kept aside, or a copy)")
	fleetFlags := auditFleetFlags(fs.FlagSet)
	if !fs.parse() {
		return 2
	}
	if fleetFlags.fleet {
		return auditTailFleet(args[0], fleetFlags, *n, fs.NArg(), stdout, stderr)
	}
	if (*dir == "" && *logFile == "") || fs.NArg() > 0 {
		fmt.Fprint(stderr, auditUsage)
		return 2
	}
	path := filepath.Join(*dir, auditFile)
	if *logFile != "" {
		path = *logFile
	}
	if args[0] == "tail" {
		return auditTail(path, *n, stdout, stderr)
	}
	var key []byte
	if !*unkeyed {
		var code int
		if key, code = auditKey(args[0], *dir, *keyFile, stderr); code != 0 {
			return code
		}
	}
	if _, err := os.Stat(path); err != nil {
		fmt.Fprintln(stderr, "promcp-device audit:", err)
		return 1
	}
	if args[0] == "checkpoint" {
		return auditCheckpoint(path, key, stdout, stderr)
	}
	return auditVerify(path, key, *cpFile, stdout, stderr)
}

// auditTail prints the last n records of the log at path.
func auditTail(path string, n int, stdout, stderr io.Writer) int {
	recs, err := audit.TailLog(path, n)
	if err != nil {
		fmt.Fprintln(stderr, "promcp-device audit tail:", err)
		return 1
	}
	for _, r := range recs {
		fmt.Fprintln(stdout, audit.Format(r))
	}
	return 0
}

// auditKey loads the chain's key for subcommand cmd: keyFile, else the
// one beside the log in dir. A non-zero code ends the command.
func auditKey(cmd, dir, keyFile string, stderr io.Writer) ([]byte, int) {
	if dir == "" && keyFile == "" {
		fmt.Fprintln(stderr, "promcp-device audit: with --log and no --state, name the key with --audit-key FILE (or --unkeyed)")
		return nil, 2
	}
	kp := (&auditConfig{key: keyFile}).keyPath(dir)
	key, err := audit.LoadKey(kp)
	if err != nil {
		fmt.Fprintf(stderr, "promcp-device audit %s: %v\n  (the key serve created beside the log; pass --audit-key FILE if serve used another, or --unkeyed for a log from before keyed chains)\n", cmd, err)
		return nil, 1
	}
	return key, 0
}

// auditCheckpoint prints a checkpoint of the log at path, which must verify.
func auditCheckpoint(path string, key []byte, stdout, stderr io.Writer) int {
	cp, _, err := audit.TakeCheckpoint(path, key, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "promcp-device audit checkpoint: %s: FAILED at %v (no checkpoint of a broken log)\n", path, err)
		return 1
	}
	line, _ := json.Marshal(cp)
	fmt.Fprintf(stdout, "%s\n", line)
	return 0
}

// auditVerify verifies the log at path (against the newest checkpoint in
// cpFile, if given) and prints what it found.
func auditVerify(path string, key []byte, cpFile string, stdout, stderr io.Writer) int {
	o := audit.VerifyOptions{Key: key}
	if cpFile != "" {
		f, err := os.Open(cpFile)
		if err != nil {
			fmt.Fprintln(stderr, "promcp-device audit verify:", err)
			return 1
		}
		cp, err := audit.ReadCheckpoint(f, key)
		f.Close()
		if err != nil {
			fmt.Fprintf(stderr, "promcp-device audit verify: --checkpoint %s: %v\n", cpFile, err)
			return 1
		}
		o.Checkpoint = &cp
	}
	sum, err := audit.VerifyLog(path, o)
	if err != nil {
		if ve, ok := errors.AsType[*audit.VerifyError](err); ok {
			fmt.Fprintf(stdout, "%s: FAILED at %v\n", path, ve)
			return 1
		}
		if errors.Is(err, audit.ErrTruncated) || errors.Is(err, audit.ErrTampered) {
			fmt.Fprintf(stdout, "%s: FAILED: %v\n", path, err)
			return 1
		}
		fmt.Fprintln(stderr, "promcp-device audit verify:", err)
		return 1
	}
	printSummary(stdout, path, key != nil, sum)
	return 0
}

// printSummary prints the one line of a log that verified.
func printSummary(stdout io.Writer, path string, keyed bool, sum audit.Summary) {
	chain := "chain intact"
	if keyed {
		chain = "keyed chain intact"
	}
	fmt.Fprintf(stdout, "%s: ok: %d records, %s; last record %d, hash %s", path, sum.Records, chain, sum.LastSeq, sum.LastHash)
	if sum.Files > 1 || sum.Anchored {
		fmt.Fprintf(stdout, "; %d files from record %d", sum.Files, sum.FirstSeq)
		if sum.Anchored {
			fmt.Fprint(stdout, " (older ones deleted by retention, chained to the anchor)")
		}
	}
	if sum.Checkpoint != "" {
		fmt.Fprint(stdout, "; "+sum.Checkpoint)
	}
	if sum.Partial {
		fmt.Fprint(stdout, "; a last line still being written was not checked")
	}
	fmt.Fprintln(stdout)
}
