package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// defaultPoll is how often a gateway's view reads the registry and the
// heartbeats when ViewConfig.Poll is 0.
const defaultPoll = time.Second

// pollOnce follows the registry and the alive bucket by reading them
// every cfg.Poll with direct gets (the last message of every key), until
// ctx ends or a read fails: how a gateway reads them. NATS lets a gateway
// create no consumers, since JetStream does not check a push consumer's
// deliver subject against its creator's permissions (a gateway could
// have the hub deliver on any subject). The registry, whose entries are
// large, is read again only when its stream has moved.
func (v *View) pollOnce(ctx context.Context) error {
	every := v.cfg.Poll
	if every <= 0 {
		every = defaultPoll
	}
	tick := time.NewTicker(every) // real time: paces NATS reads
	defer tick.Stop()
	var regSeq uint64
	keys := v.followKeys()
	seen := map[string]Info{}
	for {
		seq, err := lastSeq(ctx, v.nc, "KV_"+RegistryBucket)
		if err != nil {
			return err
		}
		if seq != regSeq || regSeq == 0 {
			entries, err := lastPerKey(ctx, v.nc, RegistryBucket, keys)
			if err != nil {
				return err
			}
			seen = map[string]Info{}
			for _, e := range entries {
				v.apply(seen, e.key, e.op, e.value)
			}
			regSeq = seq
		}
		alive, err := lastPerKey(ctx, v.nc, AliveBucket, keys)
		if err != nil {
			return err
		}
		beating := map[string]bool{}
		for _, e := range alive {
			if id, ok := strings.CutPrefix(e.key, "gw."); ok && e.op == jetstream.KeyValuePut {
				beating[id] = true
			}
		}
		v.replace(live(seen, beating))
		v.readyOne.Do(func() { close(v.ready) })
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// kvLast is the last message of one key of a bucket.
type kvLast struct {
	key   string
	seq   uint64 // its stream sequence
	op    jetstream.KeyValueOp
	value []byte
}

// lastSeq is the last sequence of stream in the hub domain.
func lastSeq(ctx context.Context, nc *nats.Conn, stream string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	js, err := jetstream.NewWithDomain(nc, HubDomain)
	if err != nil {
		return 0, err
	}
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", stream, err)
	}
	return st.CachedInfo().State.LastSeq, nil
}

// followKeys are the registry and alive keys a gateway's view reads:
// gw.<id> for each gateway it follows, or gw.* (every gateway) when it
// follows the whole fleet.
func (v *View) followKeys() []string {
	if len(v.cfg.Follow) == 0 {
		return []string{"gw.*"}
	}
	keys := make([]string, 0, len(v.cfg.Follow))
	for _, id := range v.cfg.Follow {
		if nodeRE.MatchString(id) {
			keys = append(keys, "gw."+id)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// maxMultiLast is how many keys nats-server answers in one batched
// direct get of the last message per subject (multi_last): past it the
// whole request fails with 413 Too Many Results, whatever its batch or
// up_to_seq (server/stream.go getDirectMulti, maxAllowedResponses, and
// the stores' multiLastSeqsLocked, nats-server v2.15.2). It is also the
// page size of a paged read.
const maxMultiLast = 1024

// errTooManyKeys is the server's refusal of a multi_last that matches
// more than maxMultiLast keys.
var errTooManyKeys = errors.New("more keys than one batched direct get answers")

// lastPerKey reads the last message of each of bucket's keys (subject
// filters such as gw.* or gw.<id>) in the hub domain: with one batched
// direct get (multi_last) per maxMultiLast filters, one request for a
// fleet of up to maxMultiLast gateways. A filter that matches more keys
// than the server answers at once is read again in pages of
// maxMultiLast messages (next_by_subj, each page starting after the last
// message of the one before), so a fleet of any size is read whole.
// Every request has its own 2 s budget.
func lastPerKey(ctx context.Context, nc *nats.Conn, bucket string, keys []string) ([]kvLast, error) {
	prefix := "$KV." + bucket + "."
	var out []kvLast
	for chunk := range slices.Chunk(keys, maxMultiLast) {
		filters := make([]string, len(chunk))
		for i, k := range chunk {
			filters[i] = prefix + k
		}
		got, err := multiLast(ctx, nc, bucket, filters)
		if errors.Is(err, errTooManyKeys) {
			got, err = nil, nil
			for _, f := range filters {
				page, perr := nextBySubject(ctx, nc, bucket, f)
				if perr != nil {
					return nil, perr
				}
				got = append(got, page...)
			}
		}
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return latest(out), nil
}

// latest keeps the last message (highest sequence) of each key: a paged
// read may see a key again that was rewritten between two pages.
func latest(entries []kvLast) []kvLast {
	at := make(map[string]int, len(entries))
	out := entries[:0]
	for _, e := range entries {
		i, ok := at[e.key]
		switch {
		case !ok:
			at[e.key] = len(out)
			out = append(out, e)
		case e.seq > out[i].seq:
			out[i] = e
		}
	}
	return out
}

// multiLast reads the last message of each key matching filters (at most
// maxMultiLast keys) with multi_last. An answer the server cut short (its
// max bytes) is continued where it ended, at the same stream sequence
// (up_to_seq), so the pages form one consistent read.
func multiLast(ctx context.Context, nc *nats.Conn, bucket string, filters []string) ([]kvLast, error) {
	req := map[string]any{"multi_last": filters}
	var out []kvLast
	for {
		b, err := directGet(ctx, nc, bucket, req)
		if err != nil {
			return nil, err
		}
		out = append(out, b.entries...)
		if b.pending == 0 {
			return out, nil
		}
		if len(b.entries) == 0 || b.upTo == 0 {
			return nil, fmt.Errorf("reading %s: %d keys left unread, and the answer says not where to continue", bucket, b.pending)
		}
		req = map[string]any{"multi_last": filters, "seq": b.last + 1, "up_to_seq": b.upTo}
	}
}

// nextBySubject reads every message of the keys matching filter, in
// pages of maxMultiLast (next_by_subj with batch), each starting after
// the last message of the page before, until none is pending. The
// fleet's buckets keep one message per key (History 1), so this reads
// each key's last message, as multi_last does; older revisions, if a
// bucket kept some, are dropped by latest.
func nextBySubject(ctx context.Context, nc *nats.Conn, bucket, filter string) ([]kvLast, error) {
	var out []kvLast
	var seq uint64 = 1
	for {
		b, err := directGet(ctx, nc, bucket, map[string]any{"next_by_subj": filter, "seq": seq, "batch": maxMultiLast})
		if err != nil {
			return nil, err
		}
		out = append(out, b.entries...)
		if b.pending == 0 || len(b.entries) == 0 {
			return out, nil
		}
		seq = b.last + 1
	}
}

// batch is one answer to a batched direct get: its messages, and where
// it ended (its end-of-batch marker's headers).
type batch struct {
	entries []kvLast
	pending uint64 // Nats-Num-Pending: messages left after this answer
	last    uint64 // Nats-Last-Sequence: the last message sent
	upTo    uint64 // Nats-UpTo-Sequence (multi_last): the stream sequence the answer was read at
}

// directGet sends one batched direct get request req to bucket's stream
// in the hub domain and reads its answer, within 2 s. No message (404)
// is an empty batch; more keys than the server answers at once (413) is
// errTooManyKeys.
func directGet(ctx context.Context, nc *nats.Conn, bucket string, req map[string]any) (batch, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return batch{}, err
	}
	defer sub.Unsubscribe()
	data, _ := json.Marshal(req)
	if err := nc.PublishRequest("$JS."+HubDomain+".API.DIRECT.GET.KV_"+bucket, inbox, data); err != nil {
		return batch{}, err
	}
	prefix := "$KV." + bucket + "."
	var b batch
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return batch{}, fmt.Errorf("reading %s: %w", bucket, err)
		}
		switch status := m.Header.Get("Status"); status {
		case "":
		case "204": // end of batch
			b.pending, _ = strconv.ParseUint(m.Header.Get("Nats-Num-Pending"), 10, 64)
			b.last, _ = strconv.ParseUint(m.Header.Get("Nats-Last-Sequence"), 10, 64)
			b.upTo, _ = strconv.ParseUint(m.Header.Get("Nats-UpTo-Sequence"), 10, 64)
			return b, nil
		case "404":
			return b, nil // no key (or no key left)
		case "413":
			return batch{}, fmt.Errorf("reading %s: %w", bucket, errTooManyKeys)
		case "503":
			return batch{}, fmt.Errorf("reading %s: %w", bucket, nats.ErrNoResponders)
		default:
			return batch{}, fmt.Errorf("reading %s: %s %s", bucket, status, m.Header.Get("Description"))
		}
		key, ok := strings.CutPrefix(m.Header.Get(jetstream.SubjectHeader), prefix)
		if !ok {
			return batch{}, errors.New("reading " + bucket + ": a direct get answer without its subject")
		}
		seq, _ := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
		b.entries = append(b.entries, kvLast{key: key, seq: seq, op: kvOp(m.Header), value: m.Data})
	}
}

// kvOp is the operation a bucket's message records, as the KV watcher
// reads it: a put, a delete or purge, or a marker the server left when
// the key expired (MaxAge) or was removed.
func kvOp(h nats.Header) jetstream.KeyValueOp {
	switch h.Get("KV-Operation") {
	case "DEL":
		return jetstream.KeyValueDelete
	case "PURGE":
		return jetstream.KeyValuePurge
	}
	switch h.Get(jetstream.MarkerReasonHeader) {
	case "MaxAge", "Purge":
		return jetstream.KeyValuePurge
	case "Remove":
		return jetstream.KeyValueDelete
	}
	return jetstream.KeyValuePut
}
