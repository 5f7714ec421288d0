package audit

import (
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Rotated files are named after the active file and the sequence number of
// their last record, zero-padded so that names sort in chain order:
// audit.jsonl rotates to audit-000000001234.jsonl.
type rotatedFile struct {
	path    string
	lastSeq int64
	mod     time.Time
}

func splitExt(path string) (stem, ext string) {
	ext = filepath.Ext(path)
	return strings.TrimSuffix(path, ext), ext
}

func rotatedName(path string, lastSeq int64) string {
	stem, ext := splitExt(path)
	return fmt.Sprintf("%s-%012d%s", stem, lastSeq, ext)
}

// AnchorPath is where the anchor of the log at path is kept: the last
// record of the files retention deleted, which the oldest kept file chains
// to.
func AnchorPath(path string) string { return path + ".anchor" }

// rotated lists the rotated files of the log at path, oldest first.
func rotated(path string) ([]rotatedFile, error) {
	stem, ext := splitExt(path)
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	prefix := filepath.Base(stem) + "-"
	var out []rotatedFile
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, ext) {
			continue
		}
		num := strings.TrimSuffix(strings.TrimPrefix(name, prefix), ext)
		seq, err := strconv.ParseInt(num, 10, 64)
		if err != nil || len(num) < 12 {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		out = append(out, rotatedFile{path: filepath.Join(filepath.Dir(path), name), lastSeq: seq, mod: info.ModTime()})
	}
	slices.SortFunc(out, func(a, b rotatedFile) int { return int(min(max(a.lastSeq-b.lastSeq, -1), 1)) })
	return out, nil
}

// Files lists the files of the log at path in chain order: the rotated
// ones, oldest first, then the active one.
func Files(path string) ([]string, error) {
	rot, err := rotated(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range rot {
		out = append(out, r.path)
	}
	return append(out, path), nil
}

// rotateIfDue moves the active file aside when it is too large or too old
// and starts a new one; the chain simply continues (the new file's first
// record has the old file's last hash as prev). Called by the leader only.
func (l *Log) rotateIfDue(n int) error {
	if l.size == 0 {
		return nil
	}
	now := l.opt.Now()
	due := l.opt.MaxSize > 0 && l.size+int64(n) > l.opt.MaxSize || l.opt.MaxAge > 0 && now.Sub(l.started) >= l.opt.MaxAge
	if !due {
		return nil
	}
	if l.f != nil {
		if l.dirty {
			if err := l.f.Truncate(l.size); err != nil {
				return fmt.Errorf("rotating: %w", err)
			}
			l.dirty = false
		}
		l.f.Close()
		l.f = nil // reopened by write if anything below fails
		l.dirty = true
	}
	if err := os.Rename(l.path, rotatedName(l.path, l.synced)); err != nil {
		return fmt.Errorf("rotating: %w", err)
	}
	l.size, l.started, l.dirty = 0, now, false
	if err := syncDir(l.path); err != nil {
		return fmt.Errorf("rotating: %w", err)
	}
	f, err := l.opt.OpenFile(l.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("rotating: %w", err)
	}
	l.f = f
	if err := l.retain(); err != nil {
		l.opt.Log.Warn("audit retention", "err", err)
	}
	return nil
}

// Anchor is the last record of the rotated files that retention deleted:
// the oldest kept file's first record chains to it. It has a Checkpoint's
// fields (Time is when retention wrote it); its MAC (with a keyed log)
// covers the sequence number and hash, and keeps anyone without the key
// from moving it.
type Anchor Checkpoint

// mac is HMAC-SHA256(key, the parts joined by newlines), "" without a
// key: the record chain's keyed hash over a mark's fields.
func mac(key []byte, parts ...string) string {
	if len(key) == 0 {
		return ""
	}
	return chainHash(key, "", []byte(strings.Join(parts, "\n")))
}

func (a Anchor) mac(key []byte) string {
	return mac(key, "anchor", strconv.FormatInt(a.Seq, 10), a.Hash)
}

// readAnchor returns the anchor of the log at path, nil if there is none.
func readAnchor(path string, key []byte) (*Anchor, error) {
	b, err := os.ReadFile(AnchorPath(path))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var a Anchor
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("%s: %w", AnchorPath(path), err)
	}
	if len(key) > 0 && !hmac.Equal([]byte(a.MAC), []byte(a.mac(key))) {
		return nil, fmt.Errorf("%s: %w: its MAC does not match (it was changed, or written with another key)", AnchorPath(path), ErrTampered)
	}
	return &a, nil
}

// retain deletes the rotated files last written before now - Retention,
// oldest first, after recording the last deleted record as the anchor.
func (l *Log) retain() error {
	if l.opt.Retention <= 0 {
		return nil
	}
	rot, err := rotated(l.path)
	if err != nil {
		return err
	}
	cutoff := l.opt.Now().Add(-l.opt.Retention)
	n := 0
	for n < len(rot) && rot[n].mod.Before(cutoff) {
		n++
	}
	if n == 0 {
		return nil
	}
	f, err := os.Open(rot[n-1].path)
	if err != nil {
		return err
	}
	_, last, _, err := scanEnds(f)
	f.Close()
	if err != nil {
		return err
	}
	r, ok, err := checkLine(last, l.opt.Key)
	if err != nil || !ok {
		return fmt.Errorf("%s: last record does not verify, not deleting it (%v)", rot[n-1].path, err)
	}
	a := Anchor{Seq: r.Seq, Hash: r.Hash, Time: l.opt.Now().UTC()}
	a.MAC = a.mac(l.opt.Key)
	if err := writeFileSync(AnchorPath(l.path), a); err != nil {
		return err
	}
	for _, rf := range rot[:n] {
		if err := os.Remove(rf.path); err != nil {
			return err
		}
	}
	return syncDir(l.path)
}

// writeFileSync replaces path with v's JSON, atomically and durably.
func writeFileSync(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(path)
}
