package sitetest_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/sitetest"
)

var update = flag.Bool("update", false, "rewrite testdata/errors/*.err from the current output")

// TestErrorsGolden holds every error a site test file can get from Load
// (file, position, message) in testdata/errors/<case>.err, so that a
// wrong or misleading message is seen in review.
func TestErrorsGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "errors", "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := sitetest.Load(f)
			got := ""
			if err != nil {
				got = err.Error() + "\n"
			}
			want := strings.TrimSuffix(f, ".yml") + ".err"
			if *update {
				if err := os.WriteFile(want, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			b, err := os.ReadFile(want)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(b) {
				t.Errorf("Load(%s):\n%s\nwant:\n%s", f, got, b)
			}
		})
	}
}
