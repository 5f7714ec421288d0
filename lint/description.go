package lint

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// mutationWords are the reference linter's verbs of change.
var mutationWords = []string{"create", "update", "delete", "set", "reset", "trigger", "send", "write", "insert", "modify"}

// stateWords before a verb make it a state ("since the meter was reset"),
// not something the tool does.
var stateWords = []string{"was", "were", "is", "are", "been", "being", "be"}

// mutations returns the mutation words desc uses as verbs. Words match as
// words, so "setpoint" and "asset" are not "set", with their plain
// inflections (-s, -es, -d, -ed: "resets", "updated"); a word right after
// a form of "to be" is a state, not an action, and does not count.
func mutations(desc string) []string {
	ws := strings.FieldsFunc(strings.ToLower(desc), func(r rune) bool { return !unicode.IsLetter(r) })
	var found []string
	for i, w := range ws {
		if i > 0 && slices.Contains(stateWords, ws[i-1]) {
			continue
		}
		for _, m := range mutationWords {
			if w == m || w == m+"s" || w == m+"es" || w == m+"d" || w == m+"ed" {
				if !slices.Contains(found, m) {
					found = append(found, m)
				}
			}
		}
	}
	slices.Sort(found)
	return found
}

// descriptionRules: D001–D003, the reference linter's descriptions.
var descriptionRules = []toolRule{
	{Rule{"D001", Warning, "every tool has a description", false}, func(t *Tool) []string {
		return when(t.Description == "", "Tool has no description. Descriptions are critical for accurate tool selection.")
	}},
	{Rule{"D002", Warning, "descriptions are at least 20 characters", false}, func(t *Tool) []string {
		n := utf8.RuneCountInString(t.Description)
		return when(n > 0 && n < 20, fmt.Sprintf("Description is very short (%d chars). Include what the tool does and when NOT to use it.", n))
	}},
	{Rule{"D003", Warning, "a read_* description uses no mutation verb (create, update, delete, set, reset...)", false}, func(t *Tool) []string {
		if !strings.HasPrefix(t.Name, "read_") {
			return nil
		}
		found := mutations(t.Description)
		return when(len(found) > 0, fmt.Sprintf("Description of read_* contains mutation keywords: %s. Verify this tool has no side effects.",
			strings.Join(found, ", ")))
	}},
}
