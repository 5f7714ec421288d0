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

// lastPerKey reads the last message of each of bucket's keys (subject
// filters such as gw.* or gw.<id>) with one batched direct get
// (multi_last) in the hub domain.
func lastPerKey(ctx context.Context, nc *nats.Conn, bucket string, keys []string) ([]kvLast, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	prefix := "$KV." + bucket + "."
	filters := make([]string, len(keys))
	for i, k := range keys {
		filters[i] = prefix + k
	}
	req, _ := json.Marshal(map[string]any{"multi_last": filters})
	if err := nc.PublishRequest("$JS."+HubDomain+".API.DIRECT.GET.KV_"+bucket, inbox, req); err != nil {
		return nil, err
	}
	var out []kvLast
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", bucket, err)
		}
		if m.Subject != inbox {
			continue
		}
		switch status := m.Header.Get("Status"); status {
		case "":
		case "204": // end of batch
			if np, _ := strconv.ParseUint(m.Header.Get("Nats-Num-Pending"), 10, 64); np > 0 {
				return nil, fmt.Errorf("reading %s: %d keys left unread (more than one batch)", bucket, np)
			}
			return out, nil
		case "404":
			return out, nil // no key yet
		case "503":
			return nil, fmt.Errorf("reading %s: %w", bucket, nats.ErrNoResponders)
		default:
			return nil, fmt.Errorf("reading %s: %s %s", bucket, status, m.Header.Get("Description"))
		}
		key, ok := strings.CutPrefix(m.Header.Get(jetstream.SubjectHeader), prefix)
		if !ok {
			return nil, errors.New("reading " + bucket + ": a direct get answer without its subject")
		}
		out = append(out, kvLast{key: key, op: kvOp(m.Header), value: m.Data})
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
