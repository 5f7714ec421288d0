package waitgroup_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/internal/waitgroup"
)

// Wait returns once the group is done, or with the context's error once
// the context ends first.
func TestWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		release := make(chan struct{})
		wg.Go(func() { <-release })

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := waitgroup.Wait(ctx, &wg); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait on a busy group = %v, want the context's deadline", err)
		}
		close(release)
		if err := waitgroup.Wait(t.Context(), &wg); err != nil {
			t.Fatalf("Wait on a group that ends = %v, want nil", err)
		}
	})
}
