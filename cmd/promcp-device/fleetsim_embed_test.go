//go:build natsserver

package main

import (
	"strings"
	"testing"
)

// fleet sim, bounded: 12 simulated gateways on one hub, five queries per
// intent; every gateway answers and the narrow intent asks only its ten
// (nothing timed asserted).
func TestFleetSimCommand(t *testing.T) {
	var out, errb strings.Builder
	code := cmdFleet(newCLI(t.Context(), "promcp-device fleet", []string{"sim", "--gateways", "12", "--queries", "5"}, nil, &out, &errb))
	t.Log(out.String())
	if code != 0 || errb.Len() > 0 {
		t.Fatalf("fleet sim: exit %d, stderr %q", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want a header and one line, got %q", out.String())
	}
	f := strings.Fields(lines[1])
	if f[0] != "12" || f[1] != "1" || f[4] != "0/0" {
		t.Errorf("want 12 gateways, 1 hub, no short answers: %q", lines[1])
	}
}
