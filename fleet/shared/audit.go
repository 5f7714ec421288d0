package shared

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/promcp/promcp-device/audit"
)

// Audit forwarding: each gateway's records go to a stream AUDIT_<gw> in
// its own JetStream domain (its embedded leaf server), which the hub's
// FLEET_AUDIT sources. While the gateway is cut off from the hub the
// records wait in AUDIT_<gw> on the gateway; once the link is back the
// hub pulls them in, in order. The local fsync'd, chained file log stays
// the authority; the streams are a copy for reading the fleet in one
// place. Each message carries a Nats-Msg-Id (see MsgID), so a record
// forwarded twice is stored once.

// AuditStreamOf is the name of gateway gw's audit stream.
func AuditStreamOf(gw string) string { return "AUDIT_" + gw }

// auditSubject is the subject gateway gw's records are published on.
func auditSubject(gw string) string { return "promcp.audit." + gw }

// MsgID is the Nats-Msg-Id of a gateway's record: for the records of a
// do_* call (attempt, result, recovered) "<gw>/<idempotency key>/<event>",
// so that a call's records are stored once whatever forwarded them twice;
// for every other record (refusals, replays, summaries) "<gw>/seq/<seq>".
func MsgID(gw string, r audit.Record) string {
	switch r.Event {
	case audit.EventAttempt, audit.EventResult, audit.EventRecovered:
		if r.Key != "" {
			return gw + "/" + r.Key + "/" + r.Event
		}
	}
	return fmt.Sprintf("%s/seq/%d", gw, r.Seq)
}

// Forwarder copies a gateway's audit records to its stream AUDIT_<gw>.
type Forwarder struct {
	s       *State
	js      jetstream.JetStream
	subject string

	mu     sync.Mutex
	queue  [][]byte
	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// Forwarder creates (when absent) the gateway's stream AUDIT_<gw> in
// Config.LocalDomain and starts copying records to it: pass its OnWrite
// as the audit log's audit.Options.OnWrite. The hub's FLEET_AUDIT sources
// the stream (Open arranges it once the hub answers).
func (s *State) Forwarder(ctx context.Context) (*Forwarder, error) {
	if s.cfg.LocalDomain == "" {
		return nil, errors.New("fleet audit: no local JetStream domain (Config.LocalDomain) to keep records in while the hub is out of reach")
	}
	js, err := s.localAudit(ctx)
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(context.Background())
	f := &Forwarder{s: s, js: js, subject: auditSubject(s.cfg.Gateway), wake: make(chan struct{}, 1), cancel: stop, done: make(chan struct{})}
	go f.run(runCtx)
	return f, nil
}

// localAudit creates (when absent) the gateway's stream AUDIT_<gw> in its
// local domain, so that the hub's source finds it at once.
func (s *State) localAudit(ctx context.Context) (jetstream.JetStream, error) {
	js, err := jetstream.NewWithDomain(s.nc, s.cfg.LocalDomain)
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	_, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: AuditStreamOf(s.cfg.Gateway), Description: "promcp audit records of gateway " + s.cfg.Gateway + ", sourced into the hub's " + AuditStream,
		Subjects: []string{auditSubject(s.cfg.Gateway)}, Storage: jetstream.FileStorage, Replicas: 1,
		MaxAge: 30 * 24 * time.Hour, Duplicates: 10 * time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("fleet audit: stream %s: %w", AuditStreamOf(s.cfg.Gateway), err)
	}
	return js, nil
}

// OnWrite queues the records in lines (JSON lines, as the audit log
// writes them) for forwarding. It never blocks.
func (f *Forwarder) OnWrite(lines []byte) {
	var recs [][]byte
	for line := range bytes.Lines(lines) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			recs = append(recs, slices.Clone(line))
		}
	}
	f.mu.Lock()
	f.queue = append(f.queue, recs...)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Forward publishes one record to the gateway's stream now.
func (f *Forwarder) Forward(ctx context.Context, r audit.Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return f.publish(ctx, b)
}

func (f *Forwarder) publish(ctx context.Context, line []byte) error {
	var r audit.Record
	if err := json.Unmarshal(line, &r); err != nil {
		return fmt.Errorf("fleet audit: not a record: %w", err)
	}
	ctx, cancel := f.s.bound(ctx)
	defer cancel()
	_, err := f.js.Publish(ctx, f.subject, line, jetstream.WithMsgID(MsgID(f.s.cfg.Gateway, r)))
	return err
}

func (f *Forwarder) run(ctx context.Context) {
	defer close(f.done)
	for {
		f.mu.Lock()
		var next []byte
		if len(f.queue) > 0 {
			next = f.queue[0]
		}
		f.mu.Unlock()
		if next == nil {
			select {
			case <-f.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		if err := f.publish(ctx, next); err != nil && ctx.Err() == nil && !strings.Contains(err.Error(), "not a record") {
			f.s.cfg.Log.Warn("fleet audit: forwarding a record, will retry", "err", err)
			if !sleepCtx(ctx, 200*time.Millisecond) {
				return
			}
			continue
		}
		f.mu.Lock()
		f.queue = f.queue[1:]
		f.mu.Unlock()
	}
}

// Pending is the number of records queued and not yet in AUDIT_<gw>.
func (f *Forwarder) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue)
}

// Close stops forwarding, after the queue drained or ctx ended.
func (f *Forwarder) Close(ctx context.Context) error {
	for f.Pending() > 0 {
		if !sleepCtx(ctx, 10*time.Millisecond) {
			break
		}
	}
	f.cancel()
	<-f.done
	if n := f.Pending(); n > 0 {
		return fmt.Errorf("fleet audit: %d records not forwarded (they stay in the local audit log)", n)
	}
	return nil
}

// ensureSource adds the gateway's AUDIT_<gw> to FLEET_AUDIT's sources
// when it is missing. Gateways update the stream's configuration without
// a compare-and-set, so the update is read back and tried again until the
// source is there.
func (s *State) ensureSource(ctx context.Context) error {
	_, err := s.call(ctx, opAuditSource, svcRequest{})
	return err
}

// auditSourceOf is FLEET_AUDIT's source of gateway gw's stream
// AUDIT_<gw>: from gw's own JetStream domain, delivered on
// promcp.audit.<gw>.src.…, which only gw may publish on (without a
// deliver prefix the records would cross the leaf link on $JS.S.…,
// which every gateway would then need to publish on).
func auditSourceOf(gw string) *jetstream.StreamSource {
	return &jetstream.StreamSource{Name: AuditStreamOf(gw),
		External: &jetstream.ExternalStream{APIPrefix: "$JS." + gw + ".API", DeliverPrefix: "promcp.audit." + gw + ".src"}}
}

// sourceAudit is the hubs' side of ensureSource: FLEET_AUDIT sources
// gateway gw's stream AUDIT_<gw> (auditSourceOf); a source of that name
// set up otherwise (before the deliver prefix) is replaced.
func (s *State) sourceAudit(ctx context.Context, gw string) error {
	want := auditSourceOf(gw)
	name := want.Name
	for try := 0; try < 5; try++ {
		st, err := s.js.Stream(ctx, AuditStream)
		if err != nil {
			return err
		}
		cfg := st.CachedInfo().Config
		i := slices.IndexFunc(cfg.Sources, func(src *jetstream.StreamSource) bool { return src.Name == name })
		if i >= 0 && cfg.Sources[i].External != nil && *cfg.Sources[i].External == *want.External {
			return nil
		}
		cfg.Sources = slices.DeleteFunc(cfg.Sources, func(src *jetstream.StreamSource) bool { return src.Name == name })
		cfg.Sources = append(cfg.Sources, want)
		if _, err := s.js.UpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("adding source %s to %s: %w", name, AuditStream, err)
		}
	}
	return fmt.Errorf("adding source %s to %s: still missing after 5 updates", name, AuditStream)
}

// FleetRecord is a record read from FLEET_AUDIT.
type FleetRecord struct {
	Gateway string
	Seq     uint64 // FLEET_AUDIT's sequence
	Record  audit.Record
}

// TailFleet reads the last n records (0: all) of FLEET_AUDIT in the hub
// domain through nc. A record is kept only when it is gateway <gw>'s:
// its subject promcp.audit.<gw>, sourced from AUDIT_<gw>, with a message
// id of <gw>'s; others are skipped (and logged to log, when not nil).
func TailFleet(ctx context.Context, nc *nats.Conn, hubDomain string, n int, log ...*slog.Logger) ([]FleetRecord, error) {
	var logger *slog.Logger
	if len(log) > 0 {
		logger = log[0]
	}
	return tailFleet(ctx, nc, hubDomain, n, logger)
}

func tailFleet(ctx context.Context, nc *nats.Conn, hubDomain string, n int, log *slog.Logger) ([]FleetRecord, error) {
	if hubDomain == "" {
		hubDomain = DefaultHubDomain
	}
	js, err := jetstream.NewWithDomain(nc, hubDomain)
	if err != nil {
		return nil, err
	}
	st, err := js.Stream(ctx, AuditStream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", AuditStream, err)
	}
	state := st.CachedInfo().State
	first := state.FirstSeq
	if n > 0 && state.LastSeq >= uint64(n) && state.LastSeq-uint64(n)+1 > first {
		first = state.LastSeq - uint64(n) + 1
	}
	var out []FleetRecord
	var skipped []uint64
	defer func() {
		if len(skipped) > 0 && log != nil {
			log.Warn("fleet audit: skipped records not sourced from the gateway their subject names", "seqs", skipped)
		}
	}()
	if state.Msgs == 0 || first > state.LastSeq {
		return nil, nil
	}
	read := pages
	if state.LastSeq-first < fewRecords {
		read = gets
	}
	err = read(ctx, js, st, first, state.LastSeq, func(subject string, h nats.Header, data []byte, seq uint64) error {
		fr := FleetRecord{Gateway: strings.TrimPrefix(subject, "promcp.audit."), Seq: seq}
		if err := json.Unmarshal(data, &fr.Record); err != nil {
			return fmt.Errorf("%s message %d: %w", AuditStream, seq, err)
		}
		if !ownRecord(fr.Gateway, subject, h) {
			// Only gateway <gw> may publish promcp.audit.<gw>, into its
			// own stream AUDIT_<gw>: a record that came another way, or
			// whose id names another gateway, is not <gw>'s.
			skipped = append(skipped, seq)
			return nil
		}
		out = append(out, fr)
		return nil
	})
	return out, err
}

// tailPage is how many records a tail asks the hub for at once.
const tailPage = 256

// fewRecords is how many records a tail reads one by one (a direct get
// each) rather than through a consumer, whose creation and deletion cost
// more than that many gets (BenchmarkTailFleet: 10 records 0.9 ms by
// gets, 2.0 ms paged; 100 records 7.6 ms by gets, 1.7 ms paged, on one
// loopback server).
const fewRecords = 32

// gets reads stream st's messages from sequence first to last with one
// direct get each, handing each to each in order (deleted ones skipped).
func gets(ctx context.Context, _ jetstream.JetStream, st jetstream.Stream, first, last uint64, each func(string, nats.Header, []byte, uint64) error) error {
	for seq := first; seq <= last; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s message %d: %w", AuditStream, seq, err)
		}
		if err := each(m.Subject, m.Header, m.Data, seq); err != nil {
			return err
		}
	}
	return nil
}

// pages reads stream st's messages from sequence first to last (those
// there are; deleted ones are skipped) in pages of tailPage, through an
// ephemeral consumer of its own (in memory, one replica, no acks,
// deleted at the end; the hub removes it by itself after a minute
// unused, should the delete not reach it), handing each to each in
// order. A record appended after last is not read.
func pages(ctx context.Context, js jetstream.JetStream, st jetstream.Stream, first, last uint64, each func(string, nats.Header, []byte, uint64) error) error {
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{
		Description: "promcp audit tail", AckPolicy: jetstream.AckNonePolicy,
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: first,
		MemoryStorage: true, Replicas: 1, InactiveThreshold: time.Minute,
	})
	if err != nil {
		return fmt.Errorf("%s: reading from %d: %w", AuditStream, first, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = js.DeleteConsumer(dctx, AuditStream, cons.CachedInfo().Name)
	}()
	pending := cons.CachedInfo().NumPending
	for pending > 0 {
		wait := 5 * time.Second
		if dl, ok := ctx.Deadline(); ok {
			wait = max(min(wait, time.Until(dl)), time.Millisecond)
		}
		batch, err := cons.Fetch(int(min(pending, tailPage)), jetstream.FetchMaxWait(wait))
		if err != nil {
			return fmt.Errorf("%s: reading from %d: %w", AuditStream, first, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				return fmt.Errorf("%s: a message without its metadata: %w", AuditStream, err)
			}
			if md.Sequence.Stream > last {
				return nil
			}
			if err := each(m.Subject(), m.Headers(), m.Data(), md.Sequence.Stream); err != nil {
				return err
			}
			if pending = md.NumPending; pending == 0 || md.Sequence.Stream == last {
				return nil
			}
		}
		if err := batch.Error(); err != nil {
			return fmt.Errorf("%s: reading from %d: %w", AuditStream, first, err)
		}
		if n == 0 {
			return fmt.Errorf("%s: reading from %d: no message within %s while %d are pending: %w", AuditStream, first, wait, pending, context.DeadlineExceeded)
		}
	}
	return nil
}

// ownRecord reports whether a message of FLEET_AUDIT (its subject and
// headers h) is gateway gw's: on gw's subject, it came from gw's stream
// AUDIT_<gw> (the source header names it) and its message id is one gw
// gives.
func ownRecord(gw, subject string, h nats.Header) bool {
	if !idRE.MatchString(gw) || subject != auditSubject(gw) {
		return false
	}
	if id := h.Get(jetstream.MsgIDHeader); !strings.HasPrefix(id, gw+"/") {
		return false
	}
	// "<stream>[:<hash of its API prefix>] <seq> ..." (nats-server 2.10+).
	src, _, _ := strings.Cut(h.Get("Nats-Stream-Source"), " ")
	name, _, _ := strings.Cut(src, ":")
	return name == AuditStreamOf(gw)
}
