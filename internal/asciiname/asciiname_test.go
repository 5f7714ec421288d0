package asciiname

import (
	"regexp"
	"strings"
	"testing"
)

// TestMatchEqualsRegexp checks Match against the regular expressions it
// replaces, over names at and around the length bounds and every byte value.
func TestMatchEqualsRegexp(t *testing.T) {
	cases := []struct {
		re       string
		min, max int
		extra    string
	}{
		{`^[A-Za-z0-9_-]{1,64}$`, 1, 64, "_-"},
		{`^[A-Za-z0-9._@-]{1,64}$`, 1, 64, "._@-"},
		{`^[-_=A-Za-z0-9]{1,128}$`, 1, 128, "-_="},
	}
	for _, c := range cases {
		re := regexp.MustCompile(c.re)
		var inputs []string
		for n := 0; n <= c.max+2; n++ {
			inputs = append(inputs, strings.Repeat("a", n), strings.Repeat("Z9", n)[:n])
		}
		for b := 0; b < 256; b++ {
			inputs = append(inputs, string([]byte{byte(b)}), "ab"+string([]byte{byte(b)}), string([]byte{byte(b)})+"x")
		}
		inputs = append(inputs, "é", "a\n", "a b", "ünïcode", "x.y@z-w_v=")
		for _, s := range inputs {
			if got, want := Match(s, c.min, c.max, c.extra), re.MatchString(s); got != want {
				t.Errorf("%s: Match(%q) = %v, the regexp says %v", c.re, s, got, want)
			}
		}
	}
}

// TestMatchAllocs: a check allocates nothing.
func TestMatchAllocs(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { Match("node-1_a", 1, 64, "_-") }); n != 0 {
		t.Errorf("Match allocates %v times, want 0", n)
	}
}
