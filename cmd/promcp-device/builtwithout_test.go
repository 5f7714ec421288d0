package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// builtWithoutCase is a command line that asks for a feature the binary
// may be built without, and the tag that leaves it out.
type builtWithoutCase struct {
	name string
	args []string
}

// runBuiltWithout runs each case in process and wants it refused: a
// non-zero exit and stderr naming the feature's tag to rebuild without.
// The cases run in the builds that leave the feature out (the
// builtwithout_*_test.go files, each under its tag); scripts/test runs
// them with -tags nofleet,nomqtt,noconsole,nometrics.
func runBuiltWithout(t *testing.T, tag string, cases []builtWithoutCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var out, errb strings.Builder
			code := run(ctx, tc.args, strings.NewReader(""), &out, &errb)
			want := "rebuild without -tags " + tag
			if code == 0 || !strings.Contains(errb.String(), want) {
				t.Fatalf("%v: exit %d, stderr %q: want a failure saying %q", tc.args, code, errb.String(), want)
			}
			t.Logf("exit %d: %s", code, strings.TrimSpace(errb.String()))
		})
	}
	var out, errb strings.Builder
	if code := run(t.Context(), []string{"version"}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "-tags "+tag) {
		t.Errorf("version: exit %d, %q: want the build's left-out features named", code, out.String())
	}
}

// example is the path of manifests/examples/NAME from this package.
func example(name string) string { return filepath.Join("..", "..", "manifests", "examples", name) }

// writeTemp writes data to a file in a test directory and returns its path.
func writeTemp(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
