package gateway

import (
	"slices"

	"github.com/promcp/promcp-device/manifests"
)

// jobsWithin returns the jobs of defs whose capabilities are all among
// names: a tool group that holds them serves the job's start_*,
// read_status_* and do_cancel_* too (manifests.Group.Jobs).
func jobsWithin(defs []manifests.Job, names []string) []manifests.Job {
	var out []manifests.Job
	for _, def := range defs {
		caps := def.Capabilities()
		if len(caps) > 0 && !slices.ContainsFunc(caps, func(n string) bool { return !slices.Contains(names, n) }) {
			out = append(out, def)
		}
	}
	return out
}

// servesJob reports whether the can_do of scope s answers for def: the
// scope of Serve's surface answers for every job, a group's for the jobs
// whose capabilities it holds.
func (s *scope) servesJob(def manifests.Job) bool {
	if s == s.g.jobsScope {
		return true
	}
	var names []string
	for _, c := range s.caps {
		names = append(names, c.Name)
	}
	return len(jobsWithin([]manifests.Job{def}, names)) == 1
}
