package drivers

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
)

func TestClassify(t *testing.T) {
	other := errors.New("bus on fire")
	alreadyCRC := fmt.Errorf("x: %w", ErrCRC)
	tests := []struct {
		name string
		in   error
		want error // sentinel, or nil for "unchanged"
	}{
		{"nil", nil, nil},
		{"eremoteio", ErrnoRemoteIO, ErrNACK},
		{"wrapped eremoteio", fmt.Errorf("sim: %w", ErrnoRemoteIO), ErrNACK},
		{"enxio", syscall.ENXIO, ErrNACK},
		{"periph %v text", fmt.Errorf("sysfs-i2c: %v", ErrnoRemoteIO), ErrNACK},
		{"etimedout", syscall.ETIMEDOUT, ErrTimeout},
		{"periph %v timeout text", fmt.Errorf("sysfs-i2c: %v", syscall.ETIMEDOUT), ErrTimeout},
		{"deadline", context.DeadlineExceeded, ErrTimeout},
		{"wrapped deadline", fmt.Errorf("wait: %w", context.DeadlineExceeded), ErrTimeout},
		{"canceled", context.Canceled, nil},
		{"other errno", syscall.EIO, nil},
		{"unknown", other, nil},
		{"already classified", alreadyCRC, ErrCRC},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(tc.in)
			if tc.want == nil {
				if got != tc.in {
					t.Fatalf("Classify(%v) = %v, want it unchanged", tc.in, got)
				}
				return
			}
			if !errors.Is(got, tc.want) {
				t.Fatalf("Classify(%v) = %v, want it to wrap %v", tc.in, got, tc.want)
			}
			if !errors.Is(got, tc.in) {
				t.Fatalf("Classify(%v) = %v, want it to keep wrapping the original", tc.in, got)
			}
		})
	}
}

func TestClassifyNoDoubleWrap(t *testing.T) {
	once := Classify(ErrnoRemoteIO)
	if twice := Classify(once); twice != once {
		t.Fatalf("Classify(Classify(EREMOTEIO)) = %q, want %q", twice, once)
	}
}
