// Package audit keeps a tamper-evident, append-only log of what callers
// asked the devices to do: one JSON line per do_* attempt, result, replay,
// recovery and refusal, and records saying how many refusals were
// suppressed by the rate limit or lost while the log could not write.
//
// # Chain
//
// Each line is a [Record] whose hash is HMAC-SHA256(key, previous hash ‖
// the record's JSON without the hash field) — plain SHA-256 without a key —
// and whose prev field repeats the previous hash; the first record's prev
// is 64 zeros. Changing a record breaks its MAC; removing one breaks the
// next record's prev and the sequence; recomputing the chain needs the key
// ([LoadOrCreateKey]), kept in a file apart from the log. [VerifyLog]
// checks all of it and names the first record that fails. Removing records
// from the end cannot be told from a log that stopped there: a
// [Checkpoint] kept away from the gateway ([TakeCheckpoint]) detects it.
//
// # Rotation and retention
//
// With [Options.MaxSize] or [Options.MaxAge] the active file is renamed to
// NAME-<last seq>.EXT and a new one begun; the chain runs on across files.
// With [Options.Retention] rotated files older than that are deleted after
// their last record is written to an [Anchor] (MAC'd), from which the kept
// files verify.
//
// # Bounds
//
// [Log.Append] bounds every record ([Bound]): keys longer than the do_*
// schema allows, arguments and results over a few KiB, are kept as size
// and SHA-256 ([Args], [BoundKey]). Refused records are rate-limited per
// caller; a [EventSuppressed] record counts the rest.
//
// # Durability and failure
//
// [Log.Append] returns only once the record is written and fsync'd. Appends
// that arrive together share one fsync (group commit). A write or fsync
// error fails the appends of that group (the caller must then not act:
// fail closed), the file is cut back to its last good record, and the next
// append tries again: when space returns the log works again by itself,
// first writing a [EventLost] record that counts what could not be written.
//
// # Concurrency
//
// A Log is safe for concurrent use; records are chained in the order their
// Append calls took the lock.
package audit
