package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/promcp/promcp-device/approval"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/server"
)

// commandErr prefixes a manifest load error (an unreadable file: "load
// manifest: open x.yml: ...") with the command that hit it; errors that
// start with the file's position (file:line:col) already say where they
// come from and stay as they are.
func commandErr(cmd string, err error) error {
	if strings.HasPrefix(err.Error(), "load manifest:") {
		return fmt.Errorf("promcp-device %s: %w", cmd, err)
	}
	return err
}

// onceLines writes each line it is given once: a line written before is
// dropped. Writes are whole lines (fmt.Fprintln and friends).
type onceLines struct {
	w    io.Writer
	seen map[string]bool
}

func (o *onceLines) Write(p []byte) (int, error) {
	for line := range bytes.Lines(p) {
		if o.seen[string(line)] {
			continue
		}
		o.seen[string(line)] = true
		if _, err := o.w.Write(line); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// toolsFlags are the serve flags that change the tools a gateway serves:
// `tools` takes them too, so that what it lists offline is what serve
// with the same flags answers to tools/list.
type toolsFlags struct {
	approvalKey, policy, provenance string
	readOnly                        bool
}

func toolsServeFlags(fs *flag.FlagSet) *toolsFlags {
	t := &toolsFlags{}
	fs.StringVar(&t.approvalKey, "approval-key", "", "list the tools as serve --approval-key serves them (do_* take an approval argument); the `FILE` is not read")
	fs.StringVar(&t.policy, "policy", "", "list the tools as served under the policy `FILE` (default: the manifest's, as serve finds it)")
	fs.StringVar(&t.provenance, "provenance", string(server.ProvenanceMeta), "list the tools as serve --provenance `PLACEMENT` serves them: meta or inline")
	fs.BoolVar(&t.readOnly, "read-only", false, "list the tools as serve --read-only serves them (no do_*)")
	return t
}

// options opens the gateway on the simulator as serve would with the flags.
func (t *toolsFlags) options(path string, m *manifests.Manifest) (gatewayOptions, error) {
	opts := gatewayOptions{simulate: true}
	pc, err := resolvePolicy(path, t.policy, m)
	if err != nil {
		return opts, err
	}
	opts.policy = pc.policy
	if t.provenance != string(server.ProvenanceMeta) && t.provenance != string(server.ProvenanceInline) {
		return opts, fmt.Errorf("--provenance %q: want meta or inline", t.provenance)
	}
	opts.server = append(opts.server, server.WithProvenance(server.Placement(t.provenance)))
	if t.readOnly {
		opts.server = append(opts.server, server.WithReadOnly())
	}
	if t.approvalKey != "" {
		// The schemas depend on there being a key, not on which.
		opts.approvals = approval.NewRandomSigner()
	}
	return opts, nil
}

// extraArgMessage says what serve makes of a positional argument: it
// takes none, and the flags after one are not read.
func extraArgMessage(arg, manifest string) string {
	msg := fmt.Sprintf("promcp-device serve: unexpected argument %q: serve takes flags only, and the flags after it were not read", arg)
	if manifest == "" && (strings.HasSuffix(arg, ".yml") || strings.HasSuffix(arg, ".yaml")) {
		msg += fmt.Sprintf(" (did you mean --manifest %s?)", arg)
	}
	return msg
}
