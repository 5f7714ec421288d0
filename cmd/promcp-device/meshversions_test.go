//go:build !nofleet

package main

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/fleet"
)

// TestMeshVersionsWithoutFleet: a binary built with -tags nofleet reports
// the same protocol versions a gateway reports with the fleet linked in
// (fleet_off.go repeats fleet's constants, which it cannot import).
func TestMeshVersionsWithoutFleet(t *testing.T) {
	src, err := os.ReadFile("fleet_off.go")
	if err != nil {
		t.Fatal(err)
	}
	want := "return " + strconv.Quote(fleet.PhysMCPVersion) + ", " + strconv.Quote(fleet.PromcpVersion) + " }"
	if !strings.Contains(string(src), want) {
		t.Errorf("fleet_off.go's meshVersions does not %s (fleet.PhysMCPVersion, fleet.PromcpVersion)", want)
	}
}
