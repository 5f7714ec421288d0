package metrics

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// gauge and counter make a one-sample family without labels.
func gauge(name, help string, v float64) snapshot {
	return snapshot{name: name, help: help, typ: typeGauge, samples: []sample{{value: v}}}
}

func counter(name, help string, v float64) snapshot {
	return snapshot{name: name, help: help, typ: typeCounter, samples: []sample{{value: v}}}
}

// goRuntime reads the Go runtime's figures under the names the
// Prometheus client's Go collector gives them (go_goroutines, go_threads,
// go_info, go_gc_duration_seconds and the go_memstats_* set), so that
// existing dashboards keep working.
func goRuntime() []snapshot {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	threads, _ := runtime.ThreadCreateProfile(nil)
	rt := runtimeValues("/gc/gogc:percent", "/gc/gomemlimit:bytes", "/sched/gomaxprocs:threads")
	out := []snapshot{
		gauge("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine())),
		gauge("go_threads", "Number of OS threads created.", float64(threads)),
		{name: "go_info", help: "Information about the Go environment.", typ: typeGauge,
			samples: []sample{{labels: []string{"version", runtime.Version()}, value: 1}}},
		gcPauses(),
		gauge("go_gc_gogc_percent", "Heap size target percentage configured by the user, otherwise 100. This value is set by the GOGC environment variable, and the runtime/debug.SetGCPercent function. Sourced from /gc/gogc:percent.", rt[0]),
		gauge("go_gc_gomemlimit_bytes", "Go runtime memory limit configured by the user, otherwise math.MaxInt64. This value is set by the GOMEMLIMIT environment variable, and the runtime/debug.SetMemoryLimit function. Sourced from /gc/gomemlimit:bytes.", rt[1]),
		gauge("go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting, or the number of operating system threads that can execute user-level Go code simultaneously. Sourced from /sched/gomaxprocs:threads.", rt[2]),
		gauge("go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", float64(ms.LastGC)/1e9),
	}
	for _, m := range []struct {
		name, help string
		v          uint64
		total      bool
	}{
		{"alloc_bytes", "Number of bytes allocated in heap and currently in use.", ms.Alloc, false},
		{"alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already.", ms.TotalAlloc, true},
		{"sys_bytes", "Number of bytes obtained from system.", ms.Sys, false},
		{"mallocs_total", "Total number of heap objects allocated, both live and gc-ed.", ms.Mallocs, true},
		{"frees_total", "Total number of heap objects frees.", ms.Frees, true},
		{"heap_alloc_bytes", "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes.", ms.HeapAlloc, false},
		{"heap_sys_bytes", "Number of heap bytes obtained from system.", ms.HeapSys, false},
		{"heap_idle_bytes", "Number of heap bytes waiting to be used.", ms.HeapIdle, false},
		{"heap_inuse_bytes", "Number of heap bytes that are in use.", ms.HeapInuse, false},
		{"heap_released_bytes", "Number of heap bytes released to OS.", ms.HeapReleased, false},
		{"heap_objects", "Number of currently allocated objects.", ms.HeapObjects, false},
		{"stack_inuse_bytes", "Number of bytes obtained from system for stack allocator in non-CGO environments.", ms.StackInuse, false},
		{"stack_sys_bytes", "Number of bytes obtained from system for stack allocator.", ms.StackSys, false},
		{"mspan_inuse_bytes", "Number of bytes in use by mspan structures.", ms.MSpanInuse, false},
		{"mspan_sys_bytes", "Number of bytes used for mspan structures obtained from system.", ms.MSpanSys, false},
		{"mcache_inuse_bytes", "Number of bytes in use by mcache structures.", ms.MCacheInuse, false},
		{"mcache_sys_bytes", "Number of bytes used for mcache structures obtained from system.", ms.MCacheSys, false},
		{"buck_hash_sys_bytes", "Number of bytes used by the profiling bucket hash table.", ms.BuckHashSys, false},
		{"gc_sys_bytes", "Number of bytes used for garbage collection system metadata.", ms.GCSys, false},
		{"other_sys_bytes", "Number of bytes used for other system allocations.", ms.OtherSys, false},
		{"next_gc_bytes", "Number of heap bytes when next garbage collection will take place.", ms.NextGC, false},
	} {
		if m.total {
			out = append(out, counter("go_memstats_"+m.name, m.help, float64(m.v)))
		} else {
			out = append(out, gauge("go_memstats_"+m.name, m.help, float64(m.v)))
		}
	}
	return out
}

// runtimeValues reads runtime/metrics by name (0 for one this Go does
// not have).
func runtimeValues(names ...string) []float64 {
	samples := make([]rtmetrics.Sample, len(names))
	for i, n := range names {
		samples[i].Name = n
	}
	rtmetrics.Read(samples)
	out := make([]float64, len(names))
	for i, s := range samples {
		switch s.Value.Kind() {
		case rtmetrics.KindUint64:
			out[i] = float64(s.Value.Uint64())
		case rtmetrics.KindFloat64:
			out[i] = s.Value.Float64()
		}
	}
	return out
}

// gcPauses is go_gc_duration_seconds: the quartiles of the recent
// stop-the-world pauses, their sum and count.
func gcPauses() snapshot {
	st := debug.GCStats{PauseQuantiles: make([]time.Duration, 5)}
	debug.ReadGCStats(&st)
	s := snapshot{name: "go_gc_duration_seconds", typ: typeSummary,
		help: "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles."}
	for i, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		s.samples = append(s.samples, sample{labels: []string{"quantile", q}, value: st.PauseQuantiles[i].Seconds()})
	}
	s.samples = append(s.samples, sample{suffix: "_sum", value: st.PauseTotal.Seconds()},
		sample{suffix: "_count", value: float64(st.NumGC)})
	return s
}

// process reads the process's figures from /proc under the names the
// Prometheus client's process collector gives them; none where there is
// no /proc (not Linux).
func process() []snapshot {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return nil
	}
	// The fields after the command, which is in parentheses and may hold
	// spaces: state is field 3, so f[0] is field 3.
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	if i < 0 || len(f) < 22 {
		return nil
	}
	num := func(field int) float64 { v, _ := strconv.ParseFloat(f[field-3], 64); return v }
	const ticks = 100 // USER_HZ, 100 on every Linux Go supports
	out := []snapshot{
		counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", (num(14)+num(15))/ticks),
		gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", num(23)),
		gauge("process_resident_memory_bytes", "Resident memory size in bytes.", num(24)*float64(os.Getpagesize())),
	}
	if boot := bootTime(); boot > 0 {
		out = append(out, gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", boot+num(22)/ticks))
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		out = append(out, gauge("process_open_fds", "Number of open file descriptors.", float64(len(fds))))
	}
	if limits, err := os.ReadFile("/proc/self/limits"); err == nil {
		if v, ok := limit(string(limits), "Max open files"); ok {
			out = append(out, gauge("process_max_fds", "Maximum number of open file descriptors.", v))
		}
		if v, ok := limit(string(limits), "Max address space"); ok {
			out = append(out, gauge("process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.", v))
		}
	}
	if in, outBytes, ok := netOctets(); ok {
		out = append(out, counter("process_network_receive_bytes_total", "Number of bytes received by the process over the network.", in),
			counter("process_network_transmit_bytes_total", "Number of bytes sent by the process over the network.", outBytes))
	}
	return out
}

// limit is the soft limit of a line of /proc/self/limits; unlimited is
// the largest uint64, as the Prometheus client gives it.
func limit(limits, prefix string) (float64, bool) {
	for _, l := range strings.Split(limits, "\n") {
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			fs := strings.Fields(rest)
			if len(fs) == 0 {
				return 0, false
			}
			if fs[0] == "unlimited" {
				return float64(^uint64(0)), true
			}
			v, err := strconv.ParseFloat(fs[0], 64)
			return v, err == nil
		}
	}
	return 0, false
}

// netOctets reads IpExt InOctets and OutOctets from /proc/self/net/netstat
// (the process's network namespace), as the Prometheus client does.
func netOctets() (in, out float64, ok bool) {
	b, err := os.ReadFile("/proc/self/net/netstat")
	if err != nil {
		return 0, 0, false
	}
	lines := strings.Split(string(b), "\n")
	for i := 0; i+1 < len(lines); i++ {
		names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(names) == 0 || names[0] != "IpExt:" || len(values) != len(names) {
			continue
		}
		var got int
		for j, n := range names {
			v, err := strconv.ParseFloat(values[j], 64)
			switch {
			case err != nil:
			case n == "InOctets":
				in, got = v, got+1
			case n == "OutOctets":
				out, got = v, got+1
			}
		}
		return in, out, got == 2
	}
	return 0, 0, false
}

// bootTime is the system's boot time in seconds since 1970 (btime in
// /proc/stat), 0 when unknown.
func bootTime() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "btime "); ok {
			v, _ := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v
		}
	}
	return 0
}
