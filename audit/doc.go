// Package audit keeps a tamper-evident, append-only log of what callers
// asked the devices to do: one JSON line per do_* attempt, result, replay,
// recovery and refusal.
//
// # Chain
//
// Each line is a [Record] whose hash is the SHA-256 of the previous
// record's hash followed by the record's own JSON (without the hash field),
// and whose prev field repeats the previous hash; the first record's prev is
// 64 zeros. Changing a record breaks its hash; removing one breaks the next
// record's prev and the sequence. [Verify] checks both and names the first
// record that fails. Removing records from the end cannot be told from a log
// that stopped there: keep the last sequence number and hash that Verify
// prints somewhere else to detect that.
//
// # Durability
//
// [Log.Append] returns only once the record is written and fsync'd. Appends
// that arrive together share one fsync (group commit). After a write or
// fsync error the log refuses every later append: the caller must then not
// act (fail closed).
//
// # Concurrency
//
// A Log is safe for concurrent use; records are chained in the order their
// Append calls took the lock.
package audit
