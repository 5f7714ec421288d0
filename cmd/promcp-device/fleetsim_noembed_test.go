//go:build !natsserver && !nofleet

package main

import (
	"strings"
	"testing"
)

// Without the embedded server, fleet sim says which build it needs.
func TestFleetSimCommandNeedsNATSServer(t *testing.T) {
	var out, errb strings.Builder
	code := cmdFleet(newCLI(t.Context(), "promcp-device fleet", []string{"sim"}, nil, &out, &errb))
	if code == 0 || !strings.Contains(errb.String(), "-tags natsserver") {
		t.Fatalf("exit %d, stderr %q: want a failure naming -tags natsserver", code, errb.String())
	}
}
