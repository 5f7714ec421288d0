package waitgroup_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/promcp/promcp-device/internal/waitgroup"
)

// Wait returns the context's error while the group is busy, and nil once
// the group is done.
func TestWait(t *testing.T) {
	var wg sync.WaitGroup
	release := make(chan struct{})
	wg.Go(func() { <-release })

	ended, cancel := context.WithCancel(t.Context())
	cancel()
	if err := waitgroup.Wait(ended, &wg); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a busy group = %v, want the context's error", err)
	}
	close(release)
	if err := waitgroup.Wait(t.Context(), &wg); err != nil {
		t.Fatalf("Wait on a group that ends = %v, want nil", err)
	}
}
