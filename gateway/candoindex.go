package gateway

import (
	"slices"
	"strings"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
)

// action is an action of a scope with the words Score matches an intent
// against, split once when the scope is built rather than on every call.
type action struct {
	c   *capabilities.Capability
	pos int // its position in the scope's capabilities (manifest order)
	terms
}

// terms are the words of an action that Score matches an intent against.
type terms struct {
	c manifests.Capability
	// device is the last element of its source; name the words of its
	// capability name, tool and device; around those of its location and
	// tags; vocab both.
	device              string
	name, around, vocab []string
}

func newTerms(c manifests.Capability, source string) terms {
	device := source[strings.LastIndex(source, "/")+1:]
	t := terms{c: c, device: device,
		name:   words(c.Name + " " + c.Do.Tool + " " + device),
		around: words(c.Location + " " + strings.Join(c.Tags, " "))}
	t.vocab = append(slices.Clone(t.name), t.around...)
	return t
}

func newAction(c *capabilities.Capability, pos int) action {
	return action{c: c, pos: pos, terms: newTerms(c.Capability, c.Source)}
}

// index maps what an intent can name (words of names, tools, devices,
// locations and tags; exact tool, capability and device names; locations)
// to the scope's actions and read-only capabilities, built once when the
// scope is, so that a call scores only the actions it can match and looks
// up related reads by tag instead of scanning every capability.
type index struct {
	actions []action
	byWord  map[string][]int // vocabulary word: the actions (indexes into actions) that hold it
	words   []string         // the vocabulary, sorted (prefix look-ups)
	byName  map[string][]int // tool, capability or device name: its actions
	// byLocation holds the actions by lower-cased location; "" those
	// without one, which serve every location.
	byLocation map[string][]int
	// readsByTag holds the read-only capabilities by tag, as positions in
	// the scope's capabilities.
	readsByTag map[string][]int
}

func newIndex(caps []*capabilities.Capability) *index {
	ix := &index{byWord: map[string][]int{}, byName: map[string][]int{}, byLocation: map[string][]int{}, readsByTag: map[string][]int{}}
	for pos, c := range caps {
		if c.Do == nil {
			for _, t := range slices.Compact(slices.Sorted(slices.Values(c.Tags))) {
				ix.readsByTag[t] = append(ix.readsByTag[t], pos)
			}
			continue
		}
		i := len(ix.actions)
		a := newAction(c, pos)
		ix.actions = append(ix.actions, a)
		for _, w := range slices.Compact(slices.Sorted(slices.Values(a.vocab))) {
			ix.byWord[w] = append(ix.byWord[w], i)
		}
		for _, n := range slices.Compact(slices.Sorted(slices.Values([]string{c.Name, c.Do.Tool, a.device}))) {
			ix.byName[n] = append(ix.byName[n], i)
		}
		l := strings.ToLower(c.Location)
		ix.byLocation[l] = append(ix.byLocation[l], i)
	}
	for w := range ix.byWord {
		ix.words = append(ix.words, w)
	}
	slices.Sort(ix.words)
	return ix
}

// candidates returns the actions that intent can score above 0 on (a
// superset of those Score gives a positive score), in manifest order:
// those holding a word of the intent (wordMatch), those named exactly, and
// those in the location asked or in none.
func (ix *index) candidates(intent promcp.Intent) []int {
	seen := make(map[int]bool)
	add := func(is []int) {
		for _, i := range is {
			seen[i] = true
		}
	}
	for _, w := range intentWords(intent) {
		ix.matchWord(w, add)
	}
	for _, n := range []string{strings.TrimSpace(intent.Action), strings.TrimSpace(intent.Target)} {
		if n != "" {
			add(ix.byName[n])
			add(ix.byName["do_"+n])
		}
	}
	if l := strings.ToLower(strings.TrimSpace(intent.Location)); l != "" {
		add(ix.byLocation[l])
		add(ix.byLocation[""])
		// Score compares locations with strings.EqualFold, which folds
		// more than ToLower: keep any location that folds equal.
		for loc, is := range ix.byLocation {
			if loc != l && loc != "" && strings.EqualFold(loc, l) {
				add(is)
			}
		}
	}
	out := make([]int, 0, len(seen))
	for i := range seen {
		out = append(out, i)
	}
	slices.Sort(out) // actions are in manifest order
	return out
}

// intentWords are every word Score may look up in a vocabulary: those of
// the action and target (filler left in: a superset does no harm) and the
// parts of the tags.
func intentWords(intent promcp.Intent) []string {
	ws := append(words(intent.Action), words(intent.Target)...)
	for _, t := range intent.SemanticTags {
		ws = append(ws, words(t)...)
	}
	return ws
}

// matchWord adds the actions holding a word that wordMatch pairs with w:
// w itself, words of which w is a prefix, and prefixes of w, both sides of
// at least four letters.
func (ix *index) matchWord(w string, add func([]int)) {
	add(ix.byWord[w])
	if len(w) < 4 {
		return
	}
	i, _ := slices.BinarySearch(ix.words, w)
	for ; i < len(ix.words) && strings.HasPrefix(ix.words[i], w); i++ {
		add(ix.byWord[ix.words[i]])
	}
	for k := 4; k < len(w); k++ {
		add(ix.byWord[w[:k]])
	}
}

// related returns the read-only capabilities that share a tag with action
// a, as positions in the scope's capabilities, in manifest order; the
// caller filters them with relatedTo.
func (ix *index) related(a *capabilities.Capability) []int {
	var out []int
	for _, t := range a.Tags {
		out = append(out, ix.readsByTag[t]...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
