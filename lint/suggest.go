package lint

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Naming findings on a server that does not follow proMCP say what to
// rename a tool to: whether it is a read_* or a do_* comes from its MCP
// annotations first (readOnlyHint, destructiveHint), then from the verb
// its name or description starts with; the capability comes from the
// rest of its name, or from its description when the name says nothing.

// suggested are the rules whose findings carry a suggestion.
var suggested = []string{"N002", "N003", "N007"}

// readVerbs start the name or description of a tool that only reads.
var readVerbs = []string{"get", "gets", "list", "lists", "fetch", "fetches", "query", "queries", "search", "searches",
	"find", "finds", "read", "reads", "show", "shows", "describe", "describes", "lookup", "look", "check", "checks",
	"count", "counts", "view", "return", "returns", "retrieve", "retrieves", "inspect", "status"}

// doVerbs start the name or description of a tool that changes something.
var doVerbs = []string{"set", "sets", "create", "creates", "update", "updates", "delete", "deletes", "remove", "removes",
	"write", "writes", "send", "sends", "post", "put", "run", "runs", "exec", "execute", "executes", "start", "starts",
	"stop", "stops", "launch", "launches", "restart", "restarts", "reset", "resets", "add", "adds", "move", "moves",
	"open", "opens", "close", "closes", "enable", "enables", "disable", "disables", "toggle", "toggles", "trigger",
	"triggers", "turn", "turns", "switch", "switches", "kill", "kills", "cancel", "cancels", "deploy", "deploys",
	"publish", "publishes", "upload", "uploads", "rotate", "rotates", "apply", "applies", "push", "pushes", "do",
	"rename", "renames", "insert", "inserts", "drop", "drops", "modify", "modifies", "change", "changes"}

// fillers are left out of a capability taken from a description.
var fillers = []string{"a", "an", "the", "of", "for", "to", "on", "in", "at", "by", "with", "from", "and", "or", "all",
	"every", "each", "given", "this", "that", "its", "it", "is", "are", "be", "current", "currently", "one", "new", "some"}

// Suggestion is a proMCP name proposed for a tool, and why that kind.
type Suggestion struct {
	Name string
	// Why says what decided read_* or do_*: an annotation or a verb.
	Why string
}

// Suggest proposes a proMCP name for t: read_<capability> or
// do_<capability>. ok is false when neither the annotations nor the name
// or description say whether the tool reads or acts, or nothing names a
// capability.
func Suggest(t *Tool) (Suggestion, bool) {
	words := nameWords(t.Name)
	desc := descWords(t.Description)
	prefix, why := kindOf(t, words, desc)
	if prefix == "" {
		return Suggestion{}, false
	}
	capWords := words
	if len(capWords) > 0 && (capWords[0] == "read" || capWords[0] == "do" || prefix == "read" && slices.Contains(readVerbs, capWords[0])) {
		capWords = capWords[1:]
	}
	if len(capWords) == 0 || slices.Contains(genericNames, t.Name) {
		capWords = capability(desc, prefix)
	}
	if len(capWords) == 0 {
		return Suggestion{}, false
	}
	name := prefix + "_" + strings.Join(capWords, "_")
	if len(name) > 64 {
		name = strings.TrimRight(name[:64], "_")
	}
	return Suggestion{Name: name, Why: why}, true
}

// kindOf says whether t reads or acts ("read" or "do", "" when nothing
// says), and why. readOnlyHint true decides first; then the verb the name
// or the description starts with; then readOnlyHint false or
// destructiveHint true, which come after the verb because they are MCP's
// defaults (mcp-go sends them for every tool not annotated otherwise).
func kindOf(t *Tool, name, desc []string) (string, string) {
	a := t.Annotations
	if a == nil {
		a = &Annotations{}
	}
	if a.ReadOnlyHint != nil && *a.ReadOnlyHint {
		return "read", "annotations: readOnlyHint true"
	}
	for _, src := range []struct {
		what  string
		words []string
	}{{"name", name}, {"description", desc}} {
		if len(src.words) == 0 {
			continue
		}
		switch v := src.words[0]; {
		case slices.Contains(readVerbs, v) && a.ReadOnlyHint != nil:
			return "read", fmt.Sprintf("the %s starts with %q, though readOnlyHint is false (MCP's default): check which is true", src.what, v)
		case slices.Contains(readVerbs, v):
			return "read", fmt.Sprintf("the %s starts with %q", src.what, v)
		case slices.Contains(doVerbs, v):
			return "do", fmt.Sprintf("the %s starts with %q", src.what, v)
		}
	}
	switch {
	case a.DestructiveHint != nil && *a.DestructiveHint:
		return "do", "annotations: destructiveHint true"
	case a.ReadOnlyHint != nil:
		return "do", "annotations: readOnlyHint false"
	}
	return "", ""
}

// capability picks up to four words of a description that name what the
// tool reads or acts on: a read drops its leading verb, a do keeps it
// (do_restart_build_agent); fillers before the first word that names
// something are skipped, and the first filler after it ends the name
// ("the forecast archive for a date": forecast_archive).
func capability(desc []string, prefix string) []string {
	if len(desc) > 0 && prefix == "read" && slices.Contains(readVerbs, desc[0]) {
		desc = desc[1:]
	}
	var out []string
	for i, w := range desc {
		if len(out) == 4 {
			break
		}
		if slices.Contains(fillers, w) {
			if len(out) > 1 || len(out) == 1 && (prefix == "read" || i > 1) {
				break
			}
			continue
		}
		if i == 0 && prefix == "do" {
			w = baseVerb(w) // Restarts the agent: do_restart_...
		}
		out = append(out, w)
	}
	return out
}

// baseVerb is a verb of doVerbs without its -s or -es ("restarts",
// "switches"); any other word unchanged.
func baseVerb(w string) string {
	for _, suf := range []string{"es", "s"} {
		if b, ok := strings.CutSuffix(w, suf); ok && slices.Contains(doVerbs, w) && slices.Contains(doVerbs, b) {
			return b
		}
	}
	return w
}

// nameWords splits a tool name written in snake_case, kebab-case,
// camelCase or dotted.words into lowercase words.
func nameWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return asciiWords(words)
}

// descWords is the first sentence of a description as lowercase words.
func descWords(desc string) []string {
	first, _, _ := strings.Cut(desc, ". ")
	first, _, _ = strings.Cut(first, "\n")
	first = strings.NewReplacer("'s ", " ", "’s ", " ").Replace(first) // the station's logger: station logger
	return asciiWords(strings.FieldsFunc(strings.ToLower(first), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}))
}

// asciiWords keeps the words a snake_case name can hold (a-z, 0-9).
func asciiWords(ws []string) []string {
	out := ws[:0]
	for _, w := range ws {
		w = strings.Map(func(r rune) rune {
			if r < 0x80 && (unicode.IsLower(r) || unicode.IsDigit(r)) {
				return r
			}
			return -1
		}, w)
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// withSuggestion adds to a naming finding on t the name proposed for it.
func withSuggestion(f *Finding, t *Tool) {
	if !slices.Contains(suggested, f.Code) {
		return
	}
	s, ok := Suggest(t)
	if !ok {
		f.Message += " No name suggested: neither the annotations (readOnlyHint, destructiveHint) nor the name or description say whether it reads or acts."
		return
	}
	if s.Name == t.Name {
		return
	}
	f.Suggestion = s.Name
	f.Message += fmt.Sprintf(" Suggested: '%s' (%s).", s.Name, s.Why)
}
