package manifests

import (
	"regexp"
	"strings"
	"testing"
)

// TestValidGroupNameEqualsRegexp: validGroupName accepts exactly what
// `^[a-z][a-z0-9_-]{0,63}$` (the expression it replaces) matches, over
// every byte in every position and the length bound.
func TestValidGroupNameEqualsRegexp(t *testing.T) {
	re := regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)
	inputs := []string{"", "zone1", "Zone1", "1zone", "zone 1", "zone.1", "zöne", "zone1\n", "-zone", "z_-9"}
	for n := 60; n <= 66; n++ {
		inputs = append(inputs, strings.Repeat("a", n), "z"+strings.Repeat("-", n-1))
	}
	for b := 0; b < 256; b++ {
		c := string([]byte{byte(b)})
		inputs = append(inputs, c, "a"+c, c+"a", "ab"+c+"d")
	}
	for _, s := range inputs {
		if got, want := validGroupName(s), re.MatchString(s); got != want {
			t.Errorf("validGroupName(%q) = %v, the regexp says %v", s, got, want)
		}
	}
}
