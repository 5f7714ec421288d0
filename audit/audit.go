package audit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Events a Record can carry.
const (
	// EventAttempt is written after the policy allowed a call and before
	// the device is touched; if it cannot be written, nothing actuates.
	EventAttempt = "attempt"
	// EventResult is the outcome of an attempt.
	EventResult = "result"
	// EventRefused is a call refused before any actuation (role, policy,
	// bad arguments, key conflict, read-only server, shutting down).
	EventRefused = "refused"
	// EventReplayed is a retry answered with a stored outcome.
	EventReplayed = "replayed"
	// EventRecovered is a retry of a key whose earlier attempt never
	// finished: the device was read back, not actuated.
	EventRecovered = "recovered"
)

// Genesis is the prev hash of the first record.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// Record is one line of the log. Seq, Prev and Hash are set by Append.
type Record struct {
	Seq   int64     `json:"seq"`
	Time  time.Time `json:"time"`
	Event string    `json:"event"`
	// Caller and Role identify who called, as the transport established it.
	Caller string `json:"caller"`
	Role   string `json:"role"`
	Tool   string `json:"tool"`
	Key    string `json:"idempotency_key"`
	// Arguments are the call's arguments as received.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Permission is the policy decision where one was made: the refusing
	// permission of a refused call, allowed or empty otherwise. An attempt
	// record has none yet: the role check passed and the handler decides.
	Permission string `json:"permission,omitempty"`
	// Status is the do result's status, where there is one.
	Status string `json:"status,omitempty"`
	// Result is the full do_* response, where there is one.
	Result json.RawMessage `json:"result,omitempty"`
	Reason string          `json:"reason,omitempty"`
	// Approval says who approved the action, how and when, where a human
	// did; nil otherwise.
	Approval *Approval `json:"approval,omitempty"`
	// Duration is how long the call took until this record, in ms.
	DurationMS float64 `json:"duration_ms"`
	Prev       string  `json:"prev"`
	Hash       string  `json:"hash,omitempty"`
}

// Approval is a human's approval of one action, as recorded with it.
type Approval struct {
	// By names who approved: the name given to `promcp-device approve`,
	// or, for an answer through the MCP client, the caller.
	By string `json:"by"`
	// Method is "out_of_band" (an approve token) or "elicitation".
	Method string `json:"method"`
	// At is when the approval was given (the token issued, the answer read).
	At time.Time `json:"at"`
	// ID is the one-time token's id, for out_of_band.
	ID string `json:"id,omitempty"`
}

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("audit log is closed")

// Log is an open audit log file.
type Log struct {
	f *os.File

	mu      sync.Mutex
	cond    *sync.Cond
	seq     int64  // last sequence number assigned
	last    string // hash of the last record assigned
	buf     []byte // lines assigned but not yet written
	synced  int64  // last sequence number on disk
	syncing bool
	err     error // sticky: the log is broken
}

// Open opens the log at path for appending, creating it if needed. It
// continues the chain from the last complete record; a final line without
// a newline (a write cut short by power loss, never acknowledged) is cut off.
func Open(path string) (*Log, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	l := &Log{f: f, last: Genesis}
	l.cond = sync.NewCond(&l.mu)
	end, err := l.recover()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	if _, err := f.Seek(end, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	l.synced = l.seq
	return l, nil
}

// recover finds the last complete record and returns where to append. It
// reads the file from the end, so opening a long log stays cheap.
func (l *Log) recover() (int64, error) {
	fi, err := l.f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	end := int64(-1) // just after the last newline
	var last []byte  // the last complete line
	for chunk := int64(64 << 10); ; chunk *= 2 {
		off := max(size-chunk, 0)
		buf := make([]byte, size-off)
		if _, err := l.f.ReadAt(buf, off); err != nil && err != io.EOF {
			return 0, err
		}
		nl := bytes.LastIndexByte(buf, '\n')
		if nl < 0 && off > 0 {
			continue // no newline yet: read further back
		}
		end = off + int64(nl) + 1
		if nl < 0 {
			break // no complete line at all
		}
		start := bytes.LastIndexByte(buf[:nl], '\n') + 1
		if start == 0 && off > 0 {
			continue // the last line starts further back
		}
		last = buf[start:nl]
		break
	}
	if end < size {
		if err := l.f.Truncate(end); err != nil {
			return 0, fmt.Errorf("cutting off a torn last line: %w", err)
		}
	}
	if len(last) > 0 {
		var r Record
		if err := json.Unmarshal(last, &r); err != nil {
			return 0, fmt.Errorf("last record: %w", err)
		}
		l.seq, l.last = r.Seq, r.Hash
	}
	return end, nil
}

// Append chains r to the log and returns once it is on disk. It sets
// r.Seq, r.Prev and r.Hash (and r.Time if zero) in the copy it writes.
func (l *Log) Append(ctx context.Context, r Record) error {
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	r.Time = r.Time.UTC()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	r.Seq, r.Prev, r.Hash = l.seq+1, l.last, ""
	line, hash, err := encode(r)
	if err != nil {
		return fmt.Errorf("audit: encoding record: %w", err)
	}
	l.seq, l.last = r.Seq, hash
	l.buf = append(l.buf, line...)
	mine := r.Seq
	for l.synced < mine && l.err == nil {
		if l.syncing {
			l.cond.Wait()
			continue
		}
		// Lead a group commit of everything assigned so far.
		l.syncing = true
		buf, upto := l.buf, l.seq
		l.buf = nil
		l.mu.Unlock()
		_, werr := l.f.Write(buf)
		if werr == nil {
			werr = l.f.Sync()
		}
		l.mu.Lock()
		l.syncing = false
		if werr != nil {
			l.err = fmt.Errorf("audit log is broken, refusing further records: %w", werr)
		} else {
			l.synced = upto
		}
		l.cond.Broadcast()
	}
	if l.synced < mine {
		return l.err
	}
	return nil
}

// Close flushes and closes the log. Appends after Close fail.
func (l *Log) Close() error {
	l.mu.Lock()
	for l.syncing {
		l.cond.Wait()
	}
	if l.err == nil {
		l.err = ErrClosed
	}
	l.mu.Unlock()
	serr := l.f.Sync()
	cerr := l.f.Close()
	return errors.Join(serr, cerr)
}

// encode returns r's line (with its hash and a newline) and its hash.
func encode(r Record) (line []byte, hash string, err error) {
	r.Hash = ""
	body, err := json.Marshal(r)
	if err != nil {
		return nil, "", err
	}
	hash = chainHash(r.Prev, body)
	line = append(body[:len(body)-1], `,"hash":"`+hash+"\"}\n"...)
	return line, hash, nil
}

func chainHash(prev string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// VerifyError names the first record that breaks the chain.
type VerifyError struct {
	Line int   // 1-based line number in the file
	Seq  int64 // the record's sequence number, 0 if unreadable
	Err  error
}

func (e *VerifyError) Error() string {
	if e.Seq > 0 {
		return fmt.Sprintf("line %d (record %d): %v", e.Line, e.Seq, e.Err)
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

func (e *VerifyError) Unwrap() error { return e.Err }

// ErrTampered is wrapped by a VerifyError when a record was changed,
// removed or inserted.
var ErrTampered = errors.New("audit chain broken")

// Summary is what a verified log ends with.
type Summary struct {
	Records  int64
	LastSeq  int64
	LastHash string
}

// Verify reads a log and checks every record's hash, its link to the
// previous record and the sequence. It returns a *VerifyError for the first
// record that fails.
func Verify(r io.Reader) (Summary, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	s := Summary{LastHash: Genesis}
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(b, &rec); err != nil {
			return s, &VerifyError{Line: line, Err: fmt.Errorf("%w: not a JSON record: %v", ErrTampered, err)}
		}
		fail := func(format string, a ...any) error {
			return &VerifyError{Line: line, Seq: rec.Seq, Err: fmt.Errorf("%w: "+format, append([]any{ErrTampered}, a...)...)}
		}
		suffix := `,"hash":"` + rec.Hash + `"}`
		if len(rec.Hash) != 64 || !strings.HasSuffix(string(b), suffix) {
			return s, fail("hash missing or not last")
		}
		body := append(append([]byte(nil), b[:len(b)-len(suffix)]...), '}')
		if rec.Prev != s.LastHash {
			return s, fail("prev %.12s… does not match the previous record's hash %.12s… (a record before it was changed or removed)", rec.Prev, s.LastHash)
		}
		if rec.Seq != s.LastSeq+1 {
			return s, fail("sequence %d follows %d (a record was removed or inserted)", rec.Seq, s.LastSeq)
		}
		if got := chainHash(rec.Prev, body); got != rec.Hash {
			return s, fail("content does not match its hash (the record was changed)")
		}
		s.Records++
		s.LastSeq, s.LastHash = rec.Seq, rec.Hash
	}
	if err := sc.Err(); err != nil {
		return s, fmt.Errorf("reading the audit log: %w", err)
	}
	return s, nil
}

// Tail returns the last n records of a log (all when n <= 0), oldest first.
func Tail(r io.Reader, n int) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var out []Record
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		out = append(out, rec)
		if n > 0 && len(out) > n {
			out = out[1:]
		}
	}
	return out, sc.Err()
}

// Format renders a record on one line for people:
//
//	2026-11-30T12:00:00.123Z #42 result  do_set_heater key=warm-1 by alice (operator) allowed success 3.1ms {"value":true}
func Format(r Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s #%d %-9s %s key=%s by %s (%s)", r.Time.UTC().Format("2006-01-02T15:04:05.000Z"), r.Seq, r.Event, r.Tool, r.Key, orDash(r.Caller), orDash(r.Role))
	for _, s := range []string{r.Permission, r.Status} {
		if s != "" {
			b.WriteString(" " + s)
		}
	}
	fmt.Fprintf(&b, " %.1fms", r.DurationMS)
	if len(r.Arguments) > 0 {
		b.WriteString(" " + string(r.Arguments))
	}
	if r.Reason != "" {
		b.WriteString(" — " + r.Reason)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
