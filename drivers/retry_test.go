package drivers

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

var errGarbled = errors.New("garbled frame")

func TestRetryBacksOffAndCountsOutcomes(t *testing.T) {
	exception := errors.New("illegal address")
	cases := []struct {
		name    string
		fails   []error // what tx returns on each attempt; then success
		retries int
		want    Outcome
		wantErr error
		tries   int
		waited  time.Duration
	}{
		{"first try", nil, 2, Answered, nil, 1, 0},
		{"cured by a retry", []error{errGarbled, errGarbled}, 2, Answered, nil, 3, 30 * time.Millisecond},
		{"retries spent", []error{errGarbled, errGarbled, errGarbled}, 2, Failed, errGarbled, 3, 30 * time.Millisecond},
		{"not retryable", []error{exception}, 2, Answered, exception, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tries := 0
				start := time.Now()
				p := RetryPolicy{Retries: tc.retries, Backoff: 10 * time.Millisecond, Retryable: func(err error) bool { return err != exception }}
				v, o, err := Retry(t.Context(), p, func(context.Context) (int, error) {
					tries++
					if tries <= len(tc.fails) {
						return 0, tc.fails[tries-1]
					}
					return 5, nil
				})
				if o != tc.want || !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
					t.Fatalf("Retry = %d, %v, %v; want outcome %v, error %v", v, o, err, tc.want, tc.wantErr)
				}
				if tries != tc.tries || time.Since(start) != tc.waited {
					t.Fatalf("%d tries over %s, want %d over %s (back-off 10ms, doubling)", tries, time.Since(start), tc.tries, tc.waited)
				}
			})
		})
	}
}

func TestRetryStopsWhenTheCallerGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Millisecond)
		defer cancel()
		tries := 0
		_, o, err := Retry(ctx, RetryPolicy{Retries: 5, Backoff: 10 * time.Millisecond}, func(context.Context) (int, error) {
			tries++
			return 0, errGarbled
		})
		// Tries at 0 and 10ms; the 20ms back-off is cut by the 15ms deadline.
		if o != Abandoned || tries != 2 || !errors.Is(err, ErrTimeout) || !errors.Is(err, errGarbled) {
			t.Fatalf("Retry = %v, %v after %d tries; want Abandoned, a timeout wrapping the last error, 2 tries", o, err, tries)
		}
	})
}

// Take and Wait hold the turn one caller at a time, and a caller gives up
// at its deadline with a timeout: Take says it waited for the line, Wait
// leaves that to the device, returning ctx's error only classified.
func TestTurnIsOneAtATimeAndCanBeGivenUp(t *testing.T) {
	for _, tc := range []struct {
		name   string
		take   func(Turn, context.Context) (func(), error)
		gaveUp string
	}{
		{"Take", Turn.Take, "waiting for the line: timeout: context deadline exceeded"},
		{"Wait", Turn.Wait, "timeout: context deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				turn := NewTurn()
				release, err := tc.take(turn, t.Context())
				if err != nil {
					t.Fatalf("%s on a free line = %v", tc.name, err)
				}
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				if _, err := tc.take(turn, ctx); !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || err.Error() != tc.gaveUp {
					t.Fatalf("%s on a busy line until the deadline = %v, want %q", tc.name, err, tc.gaveUp)
				}
				got := make(chan error, 1)
				go func() {
					r, err := tc.take(turn, t.Context())
					if err == nil {
						r()
					}
					got <- err
				}()
				synctest.Wait()
				select {
				case err := <-got:
					t.Fatalf("a second caller took the busy line: %v", err)
				default:
				}
				release()
				if err := <-got; err != nil {
					t.Fatalf("%s after release = %v", tc.name, err)
				}
			})
		})
	}
}
