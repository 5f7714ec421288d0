package serial

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/internal/flight"
)

// ErrNoMatch means the instrument answered a line that its response
// pattern does not match (or whose value is not a number).
var ErrNoMatch = errors.New("response does not match")

// Port is what a Line needs of a serial port; go.bug.st/serial's Port has
// it. A port that also has ResetInputBuffer() error gets stale input
// flushed before each request.
type Port interface {
	io.ReadWriteCloser
	// SetReadTimeout bounds each Read; a Read that times out returns 0, nil.
	SetReadTimeout(t time.Duration) error
}

// Config are a Line's settings; zero values mean the documented defaults.
type Config struct {
	Name string // the manifest bus name, for errors and logs
	// Timeout bounds one request and its response line. Default
	// DefaultTimeout.
	Timeout time.Duration
	// Retries is how often a failed transaction is retried; 0 means none.
	Retries int
	// Backoff is the wait before the first retry, doubling after; default 20ms.
	Backoff time.Duration
	// Clock times deadlines and back-offs; nil means the system clock.
	Clock clock.Clock
}

// DefaultTimeout bounds a transaction on a line configured with no timeout.
const DefaultTimeout = 100 * time.Millisecond

// InstrumentConfig is what an instrument sends and how its response reads.
type InstrumentConfig struct {
	// Request is the text sent, terminator excluded.
	Request string
	// Terminator ends the request and the response; default "\r\n".
	Terminator string
	// Response is a regular expression matched against the response line
	// (terminator removed); its named groups are the instrument's values.
	Response string
}

// Line is one serial port shared by line instruments.
type Line struct {
	cfg  Config
	port Port
	log  *slog.Logger
	turn drivers.Turn

	mu           sync.Mutex
	transactions uint64
}

// NewLine returns a Line on port, which it owns and closes in Close.
// NewLine does no I/O.
func NewLine(cfg Config, port Port, log *slog.Logger) *Line {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 20 * time.Millisecond
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	return &Line{cfg: cfg, port: port, log: log.With("bus", cfg.Name), turn: drivers.NewTurn()}
}

// Close closes the port.
func (l *Line) Close() error { return l.port.Close() }

// Transactions returns how many requests were put on the line.
func (l *Line) Transactions() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.transactions
}

// Instrument is one line instrument on a Line.
type Instrument struct {
	line    *Line
	name    string
	req     []byte
	term    []byte
	re      *regexp.Regexp
	timeout time.Duration

	flight flight.Group[struct{}, map[string]float64]
}

// Instrument returns the instrument that the manifest device name declares.
// timeout bounds its transactions; 0 means the line's. It fails when the
// response pattern does not compile.
func (l *Line) Instrument(name string, li InstrumentConfig, timeout time.Duration) (*Instrument, error) {
	re, err := regexp.Compile(li.Response)
	if err != nil {
		return nil, fmt.Errorf("serial %s %s: response pattern: %w", l.cfg.Name, name, err)
	}
	term := li.Terminator
	if term == "" {
		term = "\r\n"
	}
	if timeout <= 0 {
		timeout = l.cfg.Timeout
	}
	return &Instrument{line: l, name: name, req: []byte(li.Request + term), term: []byte(term), re: re, timeout: timeout}, nil
}

// Read sends the request and returns the values of the response's named
// groups. Concurrent Reads share one transaction, which goes on as long as
// one of them still waits for it (see flight.Group). Errors wrap
// drivers.ErrTimeout (no complete line in time) or ErrNoMatch.
func (in *Instrument) Read(ctx context.Context) (map[string]float64, error) {
	vals, err, joined := in.flight.Do(ctx, struct{}{}, in.read)
	if cerr := ctx.Err(); err != nil && err == cerr {
		if joined {
			return nil, drivers.Classify(cerr)
		}
		return nil, fmt.Errorf("serial %s %s: %w", in.line.cfg.Name, in.name, drivers.Classify(cerr))
	}
	return vals, err
}

func (in *Instrument) read(ctx context.Context) (map[string]float64, error) {
	cfg := in.line.cfg
	p := drivers.RetryPolicy{Retries: cfg.Retries, Backoff: cfg.Backoff, Clock: cfg.Clock}
	vals, _, err := drivers.Retry(ctx, p, in.tx)
	if err != nil {
		return vals, fmt.Errorf("serial %s %s: %w", cfg.Name, in.name, err)
	}
	return vals, nil
}

// tx performs one request/response under the line's turn.
func (in *Instrument) tx(ctx context.Context) (map[string]float64, error) {
	l := in.line
	release, err := l.turn.Take(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	l.mu.Lock()
	l.transactions++
	l.mu.Unlock()
	deadline := l.cfg.Clock.Now().Add(in.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if r, ok := l.port.(interface{ ResetInputBuffer() error }); ok {
		r.ResetInputBuffer()
	}
	if _, err := l.port.Write(in.req); err != nil {
		return nil, err
	}
	line, err := in.readLine(ctx, deadline)
	if err != nil {
		return nil, err
	}
	m := in.re.FindStringSubmatch(line)
	if m == nil {
		return nil, fmt.Errorf("%w: %q", ErrNoMatch, line)
	}
	vals := map[string]float64{}
	for i, name := range in.re.SubexpNames() {
		if name == "" {
			continue
		}
		f, err := strconv.ParseFloat(m[i], 64)
		if err != nil {
			return nil, fmt.Errorf("%w: %s = %q is not a number", ErrNoMatch, name, m[i])
		}
		vals[name] = f
	}
	return vals, nil
}

// readLine reads until the terminator or the deadline.
func (in *Instrument) readLine(ctx context.Context, deadline time.Time) (string, error) {
	var buf []byte
	chunk := make([]byte, 128)
	for {
		if i := bytes.Index(buf, in.term); i >= 0 {
			return string(buf[:i]), nil
		}
		left := deadline.Sub(in.line.cfg.Clock.Now())
		if left <= 0 || ctx.Err() != nil {
			return "", fmt.Errorf("%w: got %q without a terminator", drivers.ErrTimeout, buf)
		}
		if len(buf) > 4096 {
			return "", fmt.Errorf("%w: no terminator in %d bytes", ErrNoMatch, len(buf))
		}
		if err := in.line.port.SetReadTimeout(left); err != nil {
			return "", err
		}
		n, err := in.line.port.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if err != nil {
			return "", err
		}
	}
}
