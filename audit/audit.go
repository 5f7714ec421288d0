package audit

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"os"
	"path/filepath"
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
	// Refusals are rate-limited per caller (see [Options.RefusalBurst]).
	EventRefused = "refused"
	// EventReplayed is a retry answered with a stored outcome.
	EventReplayed = "replayed"
	// EventRecovered is a retry of a key whose earlier attempt never
	// finished: the device was read back, not actuated.
	EventRecovered = "recovered"
	// EventSuppressed says how many refusals of one caller were not
	// recorded because they came faster than the per-caller rate limit
	// (Count, and the first and last in Reason).
	EventSuppressed = "suppressed"
	// EventLost says how many records could not be written (Count) while
	// the log could not write (disk full, I/O error): the calls they
	// belonged to were refused or, after actuation, answered unaudited.
	EventLost = "lost"
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
	// Via is the fleet node a routed call came through (bound by NATS,
	// not taken from the message), "" for a direct call.
	Via  string `json:"via,omitempty"`
	Tool string `json:"tool"`
	// Key is the idempotency key, bounded (see [BoundKey]).
	Key string `json:"idempotency_key"`
	// Arguments are the call's arguments as received, or their size and
	// SHA-256 when they were schema-invalid or large (see [Args]).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Permission is the policy decision where one was made: the refusing
	// permission of a refused call, allowed or empty otherwise. An attempt
	// record has none yet: the role check passed and the handler decides.
	Permission string `json:"permission,omitempty"`
	// Approval says who approved the action, how and when, where a human
	// did; nil otherwise.
	Approval *Approval `json:"approval,omitempty"`
	// Status is the do result's status, where there is one.
	Status string `json:"status,omitempty"`
	// Result is the full do_* response, where there is one (size and
	// SHA-256 instead when it is large).
	Result json.RawMessage `json:"result,omitempty"`
	Reason string          `json:"reason,omitempty"`
	// Count is the number of records a suppressed or lost record stands for.
	Count int64 `json:"count,omitempty"`
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
	// Method is "out_of_band" (an approve token), "elicitation" or
	// "override" (an emergency override from promcp-device override).
	Method string `json:"method"`
	// At is when the approval was given (the token issued, the answer read).
	At time.Time `json:"at"`
	// ID is the token's id, for out_of_band and override.
	ID string `json:"id,omitempty"`
}

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("audit log is closed")

// File is what the log writes to; *os.File implements it. Tests inject
// one that fails (a full disk).
type File interface {
	io.ReaderAt
	io.WriterAt
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Close() error
}

// Options configure a Log. The zero value is an unkeyed log that never
// rotates, with the default refusal rate limit.
type Options struct {
	// Key keys the chain: each hash is HMAC-SHA256(Key, prev ‖ record).
	// Without it the chain is plain SHA-256, which anyone who can write
	// the file can recompute. See [LoadOrCreateKey].
	Key []byte
	// MaxSize rotates the file once it would grow past this many bytes;
	// MaxAge once its first record is this old. 0: never.
	MaxSize int64
	MaxAge  time.Duration
	// Retention deletes rotated files last written longer ago than this
	// (the active file is never deleted). 0: keep all.
	Retention time.Duration
	// RefusalBurst and RefusalEvery rate-limit refused records per caller:
	// a bucket of RefusalBurst tokens refilled one per RefusalEvery.
	// 0: the defaults; RefusalBurst < 0: no limit.
	RefusalBurst int
	RefusalEvery time.Duration
	// Now is the clock for rate limits, rotation and retention (default
	// time.Now).
	Now func() time.Time
	// OpenFile opens the log's files (default os.OpenFile).
	OpenFile func(name string, flag int, perm os.FileMode) (File, error)
	// Log receives warnings (rotation or retention failures).
	Log *slog.Logger
	// OnWrite, when set, is called with the JSON lines of each group of
	// records once it is written and fsync'd, in chain order. It is called
	// with the log's lock held: it must not block (a fleet forwarder
	// queues them) and must not keep or change lines.
	OnWrite func(lines []byte)
}

// Default refusal rate limit: a burst of 20 refused records per caller,
// then one per 5 s.
const (
	DefaultRefusalBurst = 20
	DefaultRefusalEvery = 5 * time.Second
	maxBuckets          = 1024
)

// Log is an open audit log file.
type Log struct {
	path string
	opt  Options

	mu      sync.Mutex
	cond    *sync.Cond
	f       File   // nil after a failed rotation, until reopened
	seq     int64  // last sequence number assigned
	last    string // hash of the last record assigned
	cur     *batch // records assigned but not yet written
	synced  int64  // last sequence number on disk
	sHash   string // its hash
	size    int64  // bytes of the active file up to the last synced record
	started time.Time
	syncing bool
	dirty   bool  // bytes past size may be on disk: truncate before writing
	failing error // the last write failed; cleared by the next success
	closed  bool

	lost      int64 // records refused since the last successful write
	lostSince time.Time
	buckets   map[string]*bucket
}

type bucket struct {
	tokens      float64
	at          time.Time
	role        string
	suppressed  int64
	first, last time.Time
}

// batch is a group of records written and fsync'd together.
type batch struct {
	buf  []byte
	n    int64    // caller records in it (not summaries)
	upto int64    // last seq in it
	last string   // its hash
	undo []func() // restore summaries' counts if the batch fails
	done bool
	err  error
}

// Open opens the log at path with default options. See [OpenWith].
func Open(path string) (*Log, error) { return OpenWith(path, Options{}) }

// OpenWith opens the log at path for appending, creating it if needed. It
// continues the chain from the last complete record (of path, or of the
// newest rotated file when path is empty); a final line without a newline
// (a write cut short, never acknowledged) is cut off. With a key, the last
// record must verify under it: a log from before keyed chains (plain
// SHA-256) is moved aside to path.unkeyed-TIME and a new chain begins.
func OpenWith(path string, o Options) (*Log, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.OpenFile == nil {
		o.OpenFile = func(name string, flag int, perm os.FileMode) (File, error) { return os.OpenFile(name, flag, perm) }
	}
	if o.RefusalBurst == 0 {
		o.RefusalBurst = DefaultRefusalBurst
	}
	if o.RefusalEvery <= 0 {
		o.RefusalEvery = DefaultRefusalEvery
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	l := &Log{path: path, opt: o, last: Genesis, cur: &batch{}, buckets: map[string]*bucket{}}
	l.cond = sync.NewCond(&l.mu)
	if err := l.open(); err != nil {
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	l.synced, l.sHash = l.seq, l.last
	if err := l.retain(); err != nil {
		o.Log.Warn("audit retention", "err", err)
	}
	return l, nil
}

func (l *Log) open() error {
	f, err := l.opt.OpenFile(l.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	end, lastLine, firstLine, err := scanEnds(f)
	if err != nil {
		f.Close()
		return err
	}
	if len(lastLine) == 0 {
		// An empty active file: the chain continues from the newest
		// rotated file, if any.
		rot, err := rotated(l.path)
		if err != nil {
			f.Close()
			return err
		}
		if len(rot) > 0 {
			rf, err := os.Open(rot[len(rot)-1].path)
			if err != nil {
				f.Close()
				return err
			}
			_, lastLine, _, err = scanEnds(rf)
			rf.Close()
			if err != nil {
				f.Close()
				return fmt.Errorf("%s: %w", rot[len(rot)-1].path, err)
			}
		}
	}
	if len(lastLine) > 0 {
		r, ok, err := checkLine(lastLine, l.opt.Key)
		if err != nil {
			f.Close()
			return fmt.Errorf("last record: %w", err)
		}
		if !ok {
			if _, plain, _ := checkLine(lastLine, nil); !plain || len(l.opt.Key) == 0 || end == 0 {
				f.Close()
				return fmt.Errorf("the last record (%d) does not verify with the audit key: another key file, or the record was altered; "+
					"restore the right key, or move the log aside to start a new chain", r.Seq)
			}
			// A log from before keyed chains: keep it aside, begin anew.
			f.Close()
			aside := l.path + ".unkeyed-" + l.opt.Now().UTC().Format("20060102T150405Z")
			if err := os.Rename(l.path, aside); err != nil {
				return err
			}
			l.opt.Log.Warn("the audit log was not keyed: moved aside, a keyed chain begins", "old", aside)
			return l.open()
		}
		l.seq, l.last = r.Seq, r.Hash
	}
	if err := f.Truncate(end); err != nil {
		f.Close()
		return fmt.Errorf("cutting off a torn last line: %w", err)
	}
	l.f, l.size = f, end
	l.started = l.opt.Now()
	if len(firstLine) > 0 {
		var r Record
		if json.Unmarshal(firstLine, &r) == nil && !r.Time.IsZero() && r.Time.Before(l.started) {
			l.started = r.Time // (a simulated clock may have written it in the future)
		}
	}
	return nil
}

// scanEnds finds the last complete line of f and where it ends, and the
// first line. It reads from the end, so opening a long log stays cheap.
func scanEnds(f File) (end int64, last, first []byte, err error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, nil, nil, err
	}
	size := fi.Size()
	end = -1
	for chunk := int64(64 << 10); ; chunk *= 2 {
		off := max(size-chunk, 0)
		buf := make([]byte, size-off)
		if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
			return 0, nil, nil, err
		}
		nl := bytes.LastIndexByte(buf, '\n')
		if nl < 0 && off > 0 {
			continue // no newline yet: read further back
		}
		end = off + int64(nl) + 1
		if nl < 0 {
			return 0, nil, nil, nil // no complete line at all
		}
		start := bytes.LastIndexByte(buf[:nl], '\n') + 1
		if start == 0 && off > 0 {
			continue // the last line starts further back
		}
		last = buf[start:nl]
		if off == 0 {
			first = buf[:bytes.IndexByte(buf, '\n')]
		}
		break
	}
	if first == nil {
		head := make([]byte, 4096)
		n, _ := f.ReadAt(head, 0)
		if i := bytes.IndexByte(head[:n], '\n'); i >= 0 {
			first = head[:i]
		}
	}
	return end, last, first, nil
}

// checkLine decodes a line and says whether its hash is right under key
// (prev is not checked).
func checkLine(line []byte, key []byte) (Record, bool, error) {
	var r Record
	if err := json.Unmarshal(line, &r); err != nil {
		return r, false, err
	}
	body, ok := splitHash(line, r.Hash)
	return r, ok && chainHash(key, r.Prev, body) == r.Hash, nil
}

// Append chains r to the log and returns once it is on disk. It sets
// r.Seq, r.Prev and r.Hash (and r.Time if zero) in the copy it writes, and
// bounds its fields (see [Bound]). A refused record over its caller's rate
// limit is not written and Append returns nil: a suppressed record later
// says how many were.
//
// An error means the record is not durable. The log keeps trying: once
// writes succeed again (space returned) appends succeed again, first with
// a lost record saying how many records could not be written.
func (l *Log) Append(ctx context.Context, r Record) error {
	if r.Time.IsZero() {
		r.Time = l.opt.Now()
	}
	r = Bound(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	now := l.opt.Now()
	before := len(l.cur.buf)
	l.addSummaries(now, false)
	if r.Event == EventRefused && !l.allow(r, now) {
		if len(l.cur.buf) == before {
			return nil
		}
		return l.commit(l.cur) // write the summaries this call added
	}
	if err := l.add(r, true); err != nil {
		return fmt.Errorf("audit: encoding record: %w", err)
	}
	return l.commit(l.cur)
}

// add chains r onto the open batch. Called with mu held.
func (l *Log) add(r Record, caller bool) error {
	r.Time = r.Time.UTC()
	r.Seq, r.Prev, r.Hash = l.seq+1, l.last, ""
	line, h, err := encode(r, l.opt.Key)
	if err != nil {
		return err
	}
	l.seq, l.last = r.Seq, h
	b := l.cur
	b.buf = append(b.buf, line...)
	b.upto, b.last = r.Seq, h
	if caller {
		b.n++
	}
	return nil
}

// commit waits until b is written, leading the write if no one else is.
// Called with mu held.
func (l *Log) commit(b *batch) error {
	for !b.done {
		if l.syncing {
			l.cond.Wait()
			continue
		}
		// Lead a group commit of everything assigned so far (b is l.cur:
		// a batch taken by a leader is done before syncing ends).
		l.syncing = true
		l.cur = &batch{}
		l.mu.Unlock()
		err := l.write(b.buf)
		l.mu.Lock()
		l.syncing = false
		if err != nil {
			err = fmt.Errorf("audit log unavailable (refusing until writes succeed again): %w", err)
			l.fail(b, err)
			// Records chained onto the failed ones fail with them.
			next := l.cur
			l.cur = &batch{}
			l.fail(next, err)
			l.seq, l.last = l.synced, l.sHash
			l.failing = err
		} else if len(b.buf) > 0 {
			l.synced, l.sHash = b.upto, b.last
			l.size += int64(len(b.buf))
			l.failing = nil
			if l.opt.OnWrite != nil {
				l.opt.OnWrite(b.buf)
			}
		}
		b.done = true
		l.cond.Broadcast()
	}
	return b.err
}

func (l *Log) fail(b *batch, err error) {
	if b.done {
		return
	}
	b.done, b.err = true, err
	for _, u := range b.undo {
		u()
	}
	if b.n > 0 {
		if l.lost == 0 {
			l.lostSince = l.opt.Now()
		}
		l.lost += b.n
	}
}

// write appends buf at the end of the last good record, rotating first if
// due, and fsyncs. On error the file is cut back to the last good record.
// Called by the leader only, without mu.
func (l *Log) write(buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	if err := l.rotateIfDue(len(buf)); err != nil {
		return err
	}
	if l.f == nil {
		f, err := l.opt.OpenFile(l.path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		l.f, l.dirty = f, true
	}
	if l.dirty {
		if err := l.f.Truncate(l.size); err != nil {
			return fmt.Errorf("cutting back a failed write: %w", err)
		}
		l.dirty = false
	}
	_, err := l.f.WriteAt(buf, l.size)
	if err == nil {
		err = l.f.Sync()
	}
	if err != nil {
		l.dirty = true
		if terr := l.f.Truncate(l.size); terr == nil {
			l.dirty = false
		}
	}
	return err
}

// addSummaries adds a suppressed record for each caller whose suppressed
// refusals can now be told (its bucket has a token, or all at Close), and
// a lost record if records were lost. Called with mu held.
func (l *Log) addSummaries(now time.Time, all bool) {
	if l.lost > 0 {
		n, since := l.lost, l.lostSince
		r := Record{Time: now, Event: EventLost, Count: n,
			Reason: fmt.Sprintf("%d records could not be written from %s on (the log could not write: disk full or I/O error); their calls were refused, or answered unaudited if the device had already been touched",
				n, since.UTC().Format(time.RFC3339))}
		if l.add(r, false) == nil {
			l.lost = 0
			l.cur.undo = append(l.cur.undo, func() {
				if l.lost == 0 || since.Before(l.lostSince) {
					l.lostSince = since
				}
				l.lost += n
			})
		}
	}
	for caller, bk := range l.buckets {
		if bk.suppressed == 0 {
			continue
		}
		l.refill(bk, now)
		if bk.tokens < 1 && !all {
			continue
		}
		r := Record{Time: now, Event: EventSuppressed, Caller: caller, Role: bk.role, Count: bk.suppressed,
			Reason: fmt.Sprintf("%d refused calls by %s not recorded between %s and %s (over the audit rate limit of %d, then 1 per %s)",
				bk.suppressed, caller, bk.first.UTC().Format(time.RFC3339), bk.last.UTC().Format(time.RFC3339), l.opt.RefusalBurst, l.opt.RefusalEvery)}
		if l.add(r, false) != nil {
			continue
		}
		n, first, last := bk.suppressed, bk.first, bk.last
		bk.suppressed = 0
		if bk.tokens >= 1 {
			bk.tokens--
		}
		l.cur.undo = append(l.cur.undo, func() {
			bk.suppressed += n
			if bk.first.IsZero() || first.Before(bk.first) {
				bk.first = first
			}
			if last.After(bk.last) {
				bk.last = last
			}
		})
	}
}

func (l *Log) refill(bk *bucket, now time.Time) {
	if d := now.Sub(bk.at); d > 0 {
		bk.tokens = min(float64(l.opt.RefusalBurst), bk.tokens+float64(d)/float64(l.opt.RefusalEvery))
		bk.at = now
	}
}

// allow takes a token from r's caller's bucket, or counts r as suppressed.
// Called with mu held.
func (l *Log) allow(r Record, now time.Time) bool {
	if l.opt.RefusalBurst < 0 {
		return true
	}
	name := r.Caller
	bk := l.buckets[name]
	if bk == nil {
		if len(l.buckets) >= maxBuckets {
			for n, b := range l.buckets {
				if l.refill(b, now); b.suppressed == 0 && b.tokens >= float64(l.opt.RefusalBurst) {
					delete(l.buckets, n)
				}
			}
		}
		if len(l.buckets) >= maxBuckets {
			name = "(other callers)" // one bucket shared by the rest
		}
		if bk = l.buckets[name]; bk == nil {
			bk = &bucket{tokens: float64(l.opt.RefusalBurst), at: now}
			l.buckets[name] = bk
		}
	}
	l.refill(bk, now)
	if bk.tokens >= 1 && bk.suppressed == 0 {
		bk.tokens--
		return true
	}
	if bk.suppressed == 0 {
		bk.first = now
	}
	bk.suppressed++
	bk.last, bk.role = now, r.Role
	return false
}

// Close writes the pending suppressed and lost records, flushes and
// closes the log. Appends after Close fail.
func (l *Log) Close() error {
	l.mu.Lock()
	for l.syncing {
		l.cond.Wait()
	}
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.addSummaries(l.opt.Now(), true)
	werr := l.commit(l.cur)
	l.closed = true
	f := l.f
	l.mu.Unlock()
	if f == nil {
		return werr
	}
	serr := f.Sync()
	cerr := f.Close()
	return errors.Join(werr, serr, cerr)
}

// Err is the error of the last write if it failed, nil if it succeeded.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failing
}

// encode returns r's line (with its hash and a newline) and its hash.
func encode(r Record, key []byte) (line []byte, hash string, err error) {
	r.Hash = ""
	body, err := json.Marshal(r)
	if err != nil {
		return nil, "", err
	}
	hash = chainHash(key, r.Prev, body)
	line = append(body[:len(body)-1], `,"hash":"`+hash+"\"}\n"...)
	return line, hash, nil
}

// chainHash is SHA-256(prev ‖ body), or HMAC-SHA256(key, prev ‖ body).
func chainHash(key []byte, prev string, body []byte) string {
	var h hash.Hash
	if len(key) > 0 {
		h = hmac.New(sha256.New, key)
	} else {
		h = sha256.New()
	}
	h.Write([]byte(prev))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// splitHash returns the record's body as it was hashed: the line without
// its final hash field. ok is false if the hash is missing or not last.
func splitHash(line []byte, h string) (body []byte, ok bool) {
	suffix := `,"hash":"` + h + `"}`
	if len(h) != 64 || !bytes.HasSuffix(line, []byte(suffix)) {
		return nil, false
	}
	return append(append([]byte(nil), line[:len(line)-len(suffix)]...), '}'), true
}

func syncDir(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
