package audit

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// VerifyError names the first record that breaks the chain.
type VerifyError struct {
	File string // the file, where known
	Line int    // 1-based line number in the file
	Seq  int64  // the record's sequence number, 0 if unreadable
	Err  error
}

func (e *VerifyError) Error() string {
	where := fmt.Sprintf("line %d", e.Line)
	if e.File != "" {
		where = filepath.Base(e.File) + " " + where
	}
	if e.Seq > 0 {
		return fmt.Sprintf("%s (record %d): %v", where, e.Seq, e.Err)
	}
	return fmt.Sprintf("%s: %v", where, e.Err)
}

func (e *VerifyError) Unwrap() error { return e.Err }

// ErrTampered is wrapped by a VerifyError when a record was changed,
// removed or inserted.
var ErrTampered = errors.New("audit chain broken")

// ErrTruncated is returned when the log no longer reaches a checkpoint.
var ErrTruncated = errors.New("audit log truncated")

// Summary is what a verified log ends with.
type Summary struct {
	Records  int64
	FirstSeq int64 // the oldest record kept (after retention)
	LastSeq  int64
	LastHash string
	Files    int
	// Anchored: the oldest kept record chains to the anchor retention left.
	Anchored bool
	// Partial: the active file ends in a line without a newline (being
	// written, or torn by a crash and cut off at the next start); not checked.
	Partial bool
	// Checkpoint says what the checkpoint check found, if one was given.
	Checkpoint string
}

// Verify reads one unkeyed log file from its first record and checks
// every record's hash, its link to the previous record and the sequence.
// It returns a *VerifyError for the first record that fails. See
// [VerifyLog] for keyed, rotated logs and checkpoints.
func Verify(r io.Reader) (Summary, error) {
	v := &verifier{s: Summary{LastHash: Genesis}}
	if err := v.file(r, "", false); err != nil {
		return v.s, err
	}
	return v.s, nil
}

// VerifyOptions say how to verify a log.
type VerifyOptions struct {
	// Key is the chain's HMAC key; nil for a plain SHA-256 chain.
	Key []byte
	// Checkpoint, if set, must be reached by the log with the same hash.
	Checkpoint *Checkpoint
}

// VerifyLog verifies the log at path across its rotated files, from the
// anchor retention left (or the first record) to the last, with the key,
// and against a checkpoint. It returns a *VerifyError for the first record
// that fails, an error wrapping ErrTruncated if the log ends before the
// checkpoint.
func VerifyLog(path string, o VerifyOptions) (Summary, error) {
	before, _ := Files(path)
	s, err := verifyLog(path, o)
	// Each retry follows a change of the file set, so a busy writer that
	// rotates several times during one read (seen under load in CI) makes
	// it read again, never report a false break; a log that is not being
	// written settles at once.
	for range 50 {
		after, _ := Files(path)
		if err == nil || slices.Equal(before, after) {
			break
		}
		// The log rotated (or retention ran) while it was read: read the
		// new set of files again rather than report a false break.
		before = after
		s, err = verifyLog(path, o)
	}
	return s, err
}

func verifyLog(path string, o VerifyOptions) (Summary, error) {
	anchor, err := readAnchor(path, o.Key)
	if err != nil {
		return Summary{}, err
	}
	files, err := Files(path)
	if err != nil {
		return Summary{}, err
	}
	v := &verifier{key: o.Key, anchor: anchor, cp: o.Checkpoint, s: Summary{LastHash: Genesis}}
	for i, name := range files {
		f, err := os.Open(name)
		if errors.Is(err, os.ErrNotExist) && i == len(files)-1 && i > 0 {
			continue // rotated, the new file not created yet
		}
		if err != nil {
			return v.s, err
		}
		err = v.file(f, name, i == len(files)-1)
		f.Close()
		v.s.Files++
		if err != nil {
			return v.s, err
		}
	}
	if anchor != nil && v.s.Records == 0 {
		v.s.LastSeq, v.s.LastHash, v.s.Anchored = anchor.Seq, anchor.Hash, true
	}
	if cp := o.Checkpoint; cp != nil {
		switch {
		case cp.Seq > v.s.LastSeq:
			return v.s, fmt.Errorf("%w: the log ends at record %d but checkpoint %d (taken %s) says there were more: records were removed from the end",
				ErrTruncated, v.s.LastSeq, cp.Seq, cp.Time.UTC().Format(time.RFC3339))
		case v.cpSeen:
			v.s.Checkpoint = fmt.Sprintf("reaches checkpoint %d with the same hash", cp.Seq)
		default:
			v.s.Checkpoint = fmt.Sprintf("checkpoint %d precedes the oldest kept record %d (deleted by retention): not comparable", cp.Seq, v.s.FirstSeq)
		}
	}
	return v.s, nil
}

type verifier struct {
	key    []byte
	anchor *Anchor
	cp     *Checkpoint
	cpSeen bool
	s      Summary
}

// file checks one file's records. In the active file a final line without
// a newline is left unchecked.
func (v *verifier) file(r io.Reader, name string, active bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	partial := false
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			return i + 1, data[:i], nil
		}
		if atEOF && len(data) > 0 {
			partial = true
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if partial && active {
			v.s.Partial = true
			break
		}
		if len(b) == 0 {
			continue
		}
		if err := v.record(b); err != nil {
			ve := &VerifyError{File: name, Line: line, Err: err}
			var rec Record
			if json.Unmarshal(b, &rec) == nil {
				ve.Seq = rec.Seq
			}
			return ve
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the audit log %s: %w", name, err)
	}
	return nil
}

func (v *verifier) record(b []byte) error {
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("%w: not a JSON record: %v", ErrTampered, err)
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrTampered}, a...)...)
	}
	body, ok := splitHash(b, rec.Hash)
	if !ok {
		return fail("hash missing or not last")
	}
	if v.s.Records == 0 {
		// The first record kept: the start of the chain, or the anchor.
		switch a := v.anchor; {
		case rec.Seq == 1:
		case a == nil:
			return fail("the log starts at record %d, and no anchor says records before it were deleted by retention: files were removed", rec.Seq)
		case rec.Seq > a.Seq+1:
			return fail("the log starts at record %d but the anchor ends at %d: files were removed", rec.Seq, a.Seq)
		case rec.Seq == a.Seq+1:
			v.s.Anchored = true
			v.s.LastSeq, v.s.LastHash = a.Seq, a.Hash
		default:
			// Retention stopped between writing the anchor and deleting:
			// the chain reaches the anchor below.
			v.s.LastSeq, v.s.LastHash = rec.Seq-1, rec.Prev
		}
		v.s.FirstSeq = rec.Seq
	}
	if rec.Prev != v.s.LastHash {
		return fail("prev %.12s… does not match the previous record's hash %.12s… (a record before it was changed or removed)", rec.Prev, v.s.LastHash)
	}
	if rec.Seq != v.s.LastSeq+1 {
		return fail("sequence %d follows %d (a record was removed or inserted)", rec.Seq, v.s.LastSeq)
	}
	if got := chainHash(v.key, rec.Prev, body); got != rec.Hash {
		if len(v.key) > 0 {
			return fail("content does not match its MAC (the record was changed, or written without this key)")
		}
		return fail("content does not match its hash (the record was changed)")
	}
	if a := v.anchor; a != nil && rec.Seq == a.Seq && rec.Hash != a.Hash {
		return fail("the record differs from the anchor")
	}
	if cp := v.cp; cp != nil && rec.Seq == cp.Seq {
		if rec.Hash != cp.Hash {
			return fail("the record differs from checkpoint %d (taken %s): the log was rewritten", cp.Seq, cp.Time.UTC().Format(time.RFC3339))
		}
		v.cpSeen = true
	}
	v.s.Records++
	v.s.LastSeq, v.s.LastHash = rec.Seq, rec.Hash
	return nil
}

// Checkpoint is the last record of a verified log, to be kept away from
// the gateway: a log that no longer reaches it was truncated; one whose
// record at Seq has another hash was rewritten.
type Checkpoint struct {
	Seq  int64     `json:"seq"`
	Hash string    `json:"hash"`
	Time time.Time `json:"time"`
	MAC  string    `json:"mac,omitempty"`
}

func (c Checkpoint) mac(key []byte) string {
	return mac(key, "checkpoint", strconv.FormatInt(c.Seq, 10), c.Hash, c.Time.UTC().Format(time.RFC3339Nano))
}

// TakeCheckpoint verifies the log at path and returns a checkpoint of its
// last record (MAC'd with key, if any).
func TakeCheckpoint(path string, key []byte, now time.Time) (Checkpoint, Summary, error) {
	s, err := VerifyLog(path, VerifyOptions{Key: key})
	if err != nil {
		return Checkpoint{}, s, err
	}
	c := Checkpoint{Seq: s.LastSeq, Hash: s.LastHash, Time: now.UTC()}
	c.MAC = c.mac(key)
	return c, s, nil
}

// ReadCheckpoint reads checkpoints, one JSON object a line (a line may
// carry a prefix before the object, as syslog adds), and returns the one
// with the highest sequence number. With a key, every checkpoint's MAC
// must match.
func ReadCheckpoint(r io.Reader, key []byte) (Checkpoint, error) {
	sc := bufio.NewScanner(r)
	var best Checkpoint
	found := false
	n := 0
	for sc.Scan() {
		n++
		b := sc.Bytes()
		i := bytes.IndexByte(b, '{')
		if i < 0 {
			continue
		}
		var c Checkpoint
		if err := json.Unmarshal(b[i:], &c); err != nil || c.Hash == "" {
			return best, fmt.Errorf("checkpoint line %d: not a checkpoint: %v", n, err)
		}
		if len(key) > 0 && !hmac.Equal([]byte(c.MAC), []byte(c.mac(key))) {
			return best, fmt.Errorf("checkpoint line %d: its MAC does not match this audit key", n)
		}
		if !found || c.Seq > best.Seq {
			best, found = c, true
		}
	}
	if err := sc.Err(); err != nil {
		return best, err
	}
	if !found {
		return best, errors.New("no checkpoint found")
	}
	return best, nil
}
