package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Bounds on what a record keeps of what a caller sent. A valid
// idempotency_key (at most MaxKeyRunes characters, as the do_* input schema
// says) is kept whole; anything longer is cut (see [BoundKey]).
const (
	MaxKeyRunes   = 200
	MaxArgBytes   = 4 << 10
	MaxResultSize = 8 << 10
	MaxTextBytes  = 1 << 10 // caller, role, tool, reason
	keepPrefix    = 32      // bytes of a cut value kept readable
)

// Digest stands for a value not recorded: its size and SHA-256.
type Digest struct {
	Omitted string `json:"omitted"`
	Size    int    `json:"size"`
	SHA256  string `json:"sha256"`
}

func digest(why string, b []byte) json.RawMessage {
	sum := sha256.Sum256(b)
	out, _ := json.Marshal(Digest{Omitted: why, Size: len(b), SHA256: hex.EncodeToString(sum[:])})
	return out
}

// Args is what a record keeps of a call's raw arguments: the arguments
// themselves when they passed the tool's input schema (valid), are JSON
// and are at most MaxArgBytes long; otherwise only their size and
// SHA-256, as {"omitted":"schema-invalid"|"too large"|"not JSON","size":N,"sha256":"…"}.
// Whoever holds the original can match it by its hash.
func Args(raw []byte, valid bool) json.RawMessage {
	switch {
	case !json.Valid(raw):
		return digest("not JSON", raw)
	case !valid:
		return digest("schema-invalid", raw)
	case len(raw) > MaxArgBytes:
		return digest(fmt.Sprintf("over %d bytes", MaxArgBytes), raw)
	}
	return json.RawMessage(raw)
}

// BoundKey returns key itself if a do_* schema could accept it (valid
// UTF-8, at most MaxKeyRunes characters), and
// otherwise its first 32 bytes, an ellipsis, its size and its SHA-256:
//
//	aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa…[1048576 bytes, sha256 9f86d0…]
//
// so that an invalid key is never echoed or recorded in full, and two
// different long keys never look alike.
func BoundKey(key string) string {
	if utf8.ValidString(key) && utf8.RuneCountInString(key) <= MaxKeyRunes {
		return key
	}
	return cut(key, keepPrefix)
}

// cut keeps the first n bytes of s that are valid, printable UTF-8 (up to
// the first invalid or control character) and adds size and hash.
func cut(s string, n int) string {
	end := 0
	for i, r := range s {
		if i >= n || r == utf8.RuneError || isControl(r) {
			break
		}
		end = i + utf8.RuneLen(r)
	}
	if end > n {
		end = n
	}
	for end > 0 && !utf8.ValidString(s[:end]) {
		end--
	}
	sum := sha256.Sum256([]byte(s))
	return fmt.Sprintf("%s…[%d bytes, sha256 %s]", s[:end], len(s), hex.EncodeToString(sum[:]))
}

func boundText(s string, n int) string {
	if len(s) <= n && utf8.ValidString(s) {
		return s
	}
	return cut(s, n/2)
}

// Bound returns r with every field bounded: the key by [BoundKey],
// arguments over MaxArgBytes or not JSON by their digest, a result over
// MaxResultSize by its digest, caller, role, tool and reason cut at
// MaxTextBytes. A record is therefore at most a few tens of KiB whatever
// a caller sends.
func Bound(r Record) Record {
	r.Key = BoundKey(r.Key)
	r.Caller = boundText(r.Caller, MaxTextBytes)
	r.Role = boundText(r.Role, MaxTextBytes)
	r.Tool = boundText(r.Tool, MaxTextBytes)
	r.Reason = boundText(r.Reason, MaxTextBytes)
	r.Permission = boundText(r.Permission, MaxTextBytes)
	r.Status = boundText(r.Status, MaxTextBytes)
	if len(r.Arguments) > 0 {
		r.Arguments = Args(r.Arguments, true)
	}
	if len(r.Result) > 0 && (len(r.Result) > MaxResultSize || !json.Valid(r.Result)) {
		r.Result = digest(fmt.Sprintf("over %d bytes", MaxResultSize), r.Result)
	}
	if a := r.Approval; a != nil {
		r.Approval = &Approval{By: boundText(a.By, MaxTextBytes), Method: boundText(a.Method, MaxTextBytes), At: a.At, ID: boundText(a.ID, MaxTextBytes)}
	}
	return r
}

// isControl: C0, DEL, C1, and the Unicode controls that reorder or hide
// text on a terminal (bidi overrides and isolates, line separators).
func isControl(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x2028, r == 0x2029, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}
