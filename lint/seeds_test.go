package lint_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/lint"
)

// TestSeedSummary: lint's output reports the tool-provenance seed's
// buckets with the honest counts, in text and JSON; tools no bucket fits
// are counted apart, not folded into one.
func TestSeedSummary(t *testing.T) {
	tools, err := lint.ParseTools([]byte(`[{"name":"do_launch"},{"name":"read_secret"},{"name":"can_do"},{"name":"get_status"},{"name":"list_rockets"}]`))
	if err != nil {
		t.Fatal(err)
	}
	r := lint.Check("rockets", tools)
	var text, js bytes.Buffer
	lint.WriteText(&text, r, false)
	want := "seed buckets: real_dispatch 1, read_only 2, native_only 0 (3 execute on the server, 0 native only; 2 unclassified)"
	if !strings.Contains(text.String(), want) {
		t.Errorf("text output lacks %q:\n%s", want, text.String())
	}
	if err := lint.WriteJSON(&js, r, false); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Summary struct {
			Seeds lint.SeedCounts `json:"seeds"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(js.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if got := out.Summary.Seeds; got != (lint.SeedCounts{RealDispatch: 1, ReadOnly: 2, ExecutesServerSide: 3, Unclassified: 2}) {
		t.Errorf("JSON seeds = %+v", got)
	}
}
