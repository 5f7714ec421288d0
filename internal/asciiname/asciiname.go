// Package asciiname checks short ASCII names without a regular expression.
//
// A counted repetition such as `^[A-Za-z0-9_-]{1,64}$` compiles to a
// program with one instruction per repetition: about 60 KB and 860
// allocations at package init for each such pattern (120 KB for {1,128}),
// kept for the life of the process whether or not anything is checked.
// The functions here check the same sets with no state.
package asciiname

import "strings"

// Alnum reports whether b is an ASCII letter or digit.
func Alnum(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
}

// Match reports whether s is minLen to maxLen bytes long and every byte is
// an ASCII letter or digit or one of the bytes in extra. It is
// `^[A-Za-z0-9` + extra + `]{minLen,maxLen}$`: every byte that may match is
// ASCII, so the length in bytes is the length in characters.
func Match(s string, minLen, maxLen int, extra string) bool {
	if len(s) < minLen || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !Alnum(s[i]) && strings.IndexByte(extra, s[i]) < 0 {
			return false
		}
	}
	return true
}
