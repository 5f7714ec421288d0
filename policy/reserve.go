package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/promcp/promcp-device/promcp"
)

// Unit is the set of actuators (do_* tools) reserved as one: an action's own
// and every actuator an interlock or a shared device ties to it. Units are
// symmetric: if A is in B's unit, B is in A's.
type Unit []string

// Claim is what a caller asks to reserve.
type Claim struct {
	// Action is the do_* tool that will write.
	Action string
	// Read is the read_* tool that observes the action's actuator.
	Read string
	// Unit holds Action and every actuator tied to it.
	Unit Unit
	// Value is the value the action will write.
	Value any
	// Window is how far back the history of Action is needed (the longer
	// of the cooldown and the rate-limit window); 0 needs none.
	Window time.Duration
	// Now is the time of the decision.
	Now time.Time
}

// Reservation is a claim held: the decision allowed it, and no other
// reservation on its unit exists until it is committed or released.
type Reservation struct {
	ID     uint64
	Action string
	Read   string
	Unit   Unit
	Value  any
	Since  time.Time
}

// Committed is the last value an actuation wrote to an actuator, as read
// back, and when.
type Committed struct {
	Read  string
	Value any
	Time  time.Time
}

// View is the state of a unit at one instant, as a decision reads it.
type View struct {
	// History holds the times of the claim's action's committed
	// actuations within the claim's window, and the start of its pending
	// reservation if any.
	History []time.Time
	// Pending are the reservations held on the unit's actuators.
	Pending []Reservation
	// Committed holds the last committed value of each of the unit's
	// actuators, by do_* tool.
	Committed map[string]Committed
	// HistoryErr is why History could not be read whole (FallibleState),
	// nil when it was.
	HistoryErr error
}

// Held reports whether a reservation is held on any actuator of the unit.
func (v View) Held() bool { return len(v.Pending) > 0 }

// Apply folds the view into req: the pending reservation of req's own
// action counts as an actuation now (cooldown, rate limit); the value an
// actuator of the unit is being set to is checked by the interlocks that
// watch it; a committed value newer than a reading replaces the reading
// (the cache may not have seen the write yet).
func (v View) Apply(req *Request) {
	req.History = append(slices.Clone(v.History), req.History...)
	if v.HistoryErr != nil {
		req.HistoryErr = v.HistoryErr
	}
	for _, p := range v.Pending {
		if p.Action == req.Action {
			req.InProgress = p.Since
		}
		if p.Read == "" {
			continue
		}
		if req.PendingValues == nil {
			req.PendingValues = map[string]any{}
		}
		req.PendingValues[p.Read] = p.Value
	}
	for _, c := range v.Committed {
		if c.Read == "" {
			continue
		}
		// Only a good reading is replaced: one that is not good keeps
		// failing closed.
		if r, ok := req.Readings[c.Read]; ok && r.Quality == promcp.QualityGood && !r.Time.After(c.Time) {
			r.Value, r.Time = c.Value, c.Time
			req.Readings[c.Read] = r
		}
		if cur := req.Current; cur != nil && req.CurrentRead == c.Read && cur.Quality == promcp.QualityGood && !cur.Time.After(c.Time) {
			nc := *cur
			nc.Value, nc.Time = c.Value, c.Time
			req.Current = &nc
		}
	}
}

// Reserver decides and reserves actions atomically. It is the seam between
// one gateway (LocalReserver, a lock and a state in memory) and a fleet,
// where the same three calls are a compare-and-set on a replicated store:
// Reserve reads the unit's revision and state, decides, and writes the
// reservation only if the revision is unchanged (else it decides again);
// Commit and Release update the same record.
type Reserver interface {
	// Reserve decides c with decide on the current view of c.Unit and, when
	// the decision allows the action, reserves it. decide is called from
	// Reserve's goroutine, possibly more than once (each time the unit
	// changed while it decided); it reads what it needs afresh each time
	// and must not write. A refusal
	// returns a nil Reservation and the refusing Decision. When the
	// decision allows the action but a tied actuator is reserved, Reserve
	// waits for that reservation to end and decides again; it returns an
	// error only when ctx ends first.
	Reserve(ctx context.Context, c Claim, decide func(ctx context.Context, v View) Decision) (*Reservation, Decision, error)
	// Commit ends r as an actuation at time at that left applied on the
	// actuator: it enters the history and the committed values.
	Commit(ctx context.Context, r *Reservation, at time.Time, applied any) error
	// Release ends r as no actuation.
	Release(ctx context.Context, r *Reservation) error
	// Snapshot returns the view of c's unit now, without reserving: what
	// can_do reads.
	Snapshot(c Claim) View
}

// ErrNotHeld is returned by Commit and Release for a reservation that is
// not held (already ended, or never given).
var ErrNotHeld = errors.New("reservation is not held")

// LocalReserver is the Reserver of a single gateway: reservations and
// committed values in memory, history in a State. Safe for concurrent use.
type LocalReserver struct {
	state State

	mu        sync.Mutex
	next      uint64
	rev       map[string]uint64 // by action: bumped on every reserve, commit, release
	pending   map[string]*Reservation
	committed map[string]Committed
	changed   chan struct{} // closed and replaced whenever a reservation ends
}

// NewLocalReserver returns a LocalReserver that records committed
// actuations in state.
func NewLocalReserver(state State) *LocalReserver {
	return &LocalReserver{state: state, rev: map[string]uint64{}, pending: map[string]*Reservation{},
		committed: map[string]Committed{}, changed: make(chan struct{})}
}

// maxStaleRefusals bounds how often a refusal taken on a view that changed
// meanwhile is decided again before it is answered as it stands.
const maxStaleRefusals = 8

// Reserve implements Reserver.
func (l *LocalReserver) Reserve(ctx context.Context, c Claim, decide func(ctx context.Context, v View) Decision) (*Reservation, Decision, error) {
	if !slices.Contains(c.Unit, c.Action) {
		c.Unit = append(slices.Clone(c.Unit), c.Action)
	}
	stale := 0
	for {
		l.mu.Lock()
		v, rev := l.viewLocked(c)
		l.mu.Unlock()

		d := decide(ctx, v)

		l.mu.Lock()
		changed := l.revLocked(c.Unit) != rev
		switch {
		case !d.Allowed() && changed && stale < maxStaleRefusals:
			stale++
			l.mu.Unlock()
			continue
		case !d.Allowed():
			l.mu.Unlock()
			return nil, d, nil
		case changed:
			// Decided on a state that is gone: decide again (compare-and-set).
			l.mu.Unlock()
			continue
		case l.heldLocked(c.Unit):
			wait := l.changed
			l.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, d, fmt.Errorf("waiting for the action in progress on %s: %w", c.Action, ctx.Err())
			}
		}
		l.next++
		r := &Reservation{ID: l.next, Action: c.Action, Read: c.Read, Unit: slices.Clone(c.Unit), Value: d.Value, Since: c.Now}
		l.pending[c.Action] = r
		l.rev[c.Action]++
		l.mu.Unlock()
		return r, d, nil
	}
}

// Commit implements Reserver.
func (l *LocalReserver) Commit(_ context.Context, r *Reservation, at time.Time, applied any) error {
	// One step under the lock: recorded before the reservation ends, so no
	// decision sees neither, and in the same critical section, so no
	// decision sees both (the actuation in the history and still pending)
	// and refuses a caller the rate limit allows. State.Record may fsync;
	// a commit is one per actuation, and other actuators wait that long.
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.pendingLocked("commit", r); err != nil {
		return err
	}
	l.state.Record(r.Action, at)
	l.committed[r.Action] = Committed{Read: r.Read, Value: applied, Time: at}
	l.endLocked(r)
	return nil
}

// Release implements Reserver.
func (l *LocalReserver) Release(_ context.Context, r *Reservation) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.pendingLocked("release", r); err != nil {
		return err
	}
	l.endLocked(r)
	return nil
}

// pendingLocked is nil if r is the pending reservation of its action, else
// ErrNotHeld (wrapped with op and the action).
func (l *LocalReserver) pendingLocked(op string, r *Reservation) error {
	if r == nil {
		return ErrNotHeld
	}
	if l.pending[r.Action] != r {
		return fmt.Errorf("%s %s: %w", op, r.Action, ErrNotHeld)
	}
	return nil
}

// Snapshot implements Reserver.
func (l *LocalReserver) Snapshot(c Claim) View {
	if !slices.Contains(c.Unit, c.Action) {
		c.Unit = append(slices.Clone(c.Unit), c.Action)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	v, _ := l.viewLocked(c)
	return v
}

func (l *LocalReserver) endLocked(r *Reservation) {
	delete(l.pending, r.Action)
	l.rev[r.Action]++
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *LocalReserver) viewLocked(c Claim) (View, uint64) {
	v := View{Committed: map[string]Committed{}}
	if c.Window > 0 {
		if fs, ok := l.state.(FallibleState); ok {
			v.History, v.HistoryErr = fs.HistoryErr(c.Action, c.Now.Add(-c.Window))
		} else {
			v.History = l.state.History(c.Action, c.Now.Add(-c.Window))
		}
	}
	for _, a := range c.Unit {
		if p := l.pending[a]; p != nil {
			v.Pending = append(v.Pending, *p)
			if a == c.Action {
				v.History = append(v.History, p.Since)
			}
		}
		if cm, ok := l.committed[a]; ok {
			v.Committed[a] = cm
		}
	}
	return v, l.revLocked(c.Unit)
}

func (l *LocalReserver) revLocked(unit Unit) uint64 {
	var sum uint64
	for _, a := range unit {
		sum += l.rev[a]
	}
	return sum
}

func (l *LocalReserver) heldLocked(unit Unit) bool {
	for _, a := range unit {
		if l.pending[a] != nil {
			return true
		}
	}
	return false
}
