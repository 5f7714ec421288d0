package pwm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/sysfs"
)

// kernel is a pwm chip's files that refuse what the kernel refuses: a duty
// cycle longer than the period, enabling without a period. It logs every
// write.
type kernel struct {
	files  map[string]string
	writes []string
}

func newKernel() *kernel {
	return &kernel{files: map[string]string{"export": "", "npwm": "2\n"}}
}

func (k *kernel) ReadFile(_ context.Context, name string) ([]byte, error) {
	s, ok := k.files[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", drivers.ErrUnavailable, name)
	}
	return []byte(s), nil
}

func (k *kernel) num(name string) int64 {
	v, _ := strconv.ParseInt(strings.TrimSpace(k.files[name]), 10, 64)
	return v
}

func (k *kernel) WriteFile(_ context.Context, name string, data []byte) error {
	k.writes = append(k.writes, name+"="+string(data))
	v, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return syscall.EINVAL
	}
	if name == "export" {
		p := "pwm" + string(data) + "/"
		k.files[p+"period"], k.files[p+"duty_cycle"], k.files[p+"enable"] = "0\n", "0\n", "0\n"
		return nil
	}
	dir, attr, _ := strings.Cut(name, "/")
	switch {
	case attr == "period" && v < k.num(dir+"/duty_cycle"):
		return syscall.EINVAL
	case attr == "duty_cycle" && v > k.num(dir+"/period"):
		return syscall.EINVAL
	case attr == "enable" && k.num(dir+"/period") == 0:
		return syscall.EINVAL
	}
	k.files[name] = string(data) + "\n"
	return nil
}

func TestOpenExportsAndSetsFrequency(t *testing.T) {
	k := newKernel()
	c := New(k, 1)
	if err := c.Open(context.Background(), 25000); err != nil {
		t.Fatal(err)
	}
	want := []string{"export=1", "pwm1/period=40000", "pwm1/enable=1"}
	if fmt.Sprint(k.writes) != fmt.Sprint(want) {
		t.Fatalf("writes %v, want %v", k.writes, want)
	}
	// Opening again (a restart) changes nothing the kernel holds.
	k.writes = nil
	if err := New(k, 1).Open(context.Background(), 1000); err != nil || len(k.writes) != 0 {
		t.Fatalf("reopen: %v, writes %v", err, k.writes)
	}
}

func TestDutyAndFrequencyReadBack(t *testing.T) {
	ctx := context.Background()
	k := newKernel()
	c := New(k, 0)
	if err := c.Open(ctx, 25000); err != nil {
		t.Fatal(err)
	}
	if err := c.SetDuty(ctx, 62.5); err != nil {
		t.Fatal(err)
	}
	s, err := c.State(ctx)
	if err != nil || s.Duty != 25000 || s.DutyPercent() != 62.5 || s.Frequency() != 25000 {
		t.Fatalf("State = %+v, %v", s, err)
	}
	// Up in frequency (a shorter period): the duty cycle first, or the
	// kernel refuses the period.
	k.writes = nil
	if err := c.SetFrequency(ctx, 50000); err != nil {
		t.Fatal(err)
	}
	if want := []string{"pwm0/duty_cycle=12500", "pwm0/period=20000"}; fmt.Sprint(k.writes) != fmt.Sprint(want) {
		t.Fatalf("writes %v, want %v", k.writes, want)
	}
	// Down: the period first.
	k.writes = nil
	if err := c.SetFrequency(ctx, 100); err != nil {
		t.Fatal(err)
	}
	if want := []string{"pwm0/period=10000000", "pwm0/duty_cycle=6250000"}; fmt.Sprint(k.writes) != fmt.Sprint(want) {
		t.Fatalf("writes %v, want %v", k.writes, want)
	}
	if s, _ := c.State(ctx); s.DutyPercent() != 62.5 || s.Frequency() != 100 {
		t.Fatalf("State = %+v", s)
	}
	for _, bad := range []float64{-1, 100.5} {
		if err := c.SetDuty(ctx, bad); err == nil {
			t.Errorf("SetDuty(%g) = nil, want an error", bad)
		}
	}
}

// On real files: a chip whose channel the kernel has not exported and an
// export file that is missing (no overlay) say so.
func TestMissingChip(t *testing.T) {
	dir := t.TempDir()
	err := New(sysfs.Dir(dir), 0).Open(context.Background(), 25000)
	if err == nil || !strings.Contains(err.Error(), "dtoverlay=pwm-2chan") {
		t.Fatalf("Open on an empty directory = %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "export"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The export file takes the write, but no pwm0 appears (no kernel).
	if err := New(sysfs.Dir(dir), 0).Open(context.Background(), 25000); err == nil {
		t.Fatal("Open without a kernel behind the files = nil")
	}
}
