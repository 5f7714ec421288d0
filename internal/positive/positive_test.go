package positive_test

import (
	"testing"
	"time"

	"github.com/promcp/promcp-device/internal/positive"
)

func TestOr(t *testing.T) {
	if got := positive.Or(3, 7); got != 3 {
		t.Errorf("Or(3, 7) = %d, want 3", got)
	}
	for _, v := range []int{0, -1} {
		if got := positive.Or(v, 7); got != 7 {
			t.Errorf("Or(%d, 7) = %d, want the default 7", v, got)
		}
	}
	if got := positive.Or(-time.Second, time.Minute); got != time.Minute {
		t.Errorf("Or(-1s, 1m) = %v, want 1m", got)
	}
	if got := positive.Or(0.5, 2.0); got != 0.5 {
		t.Errorf("Or(0.5, 2) = %v, want 0.5", got)
	}
}
