package manifests

import (
	"fmt"
	"slices"

	"github.com/goccy/go-yaml/ast"
)

// declareRoles decodes the policy's roles: (names, or {name, read_only}
// mappings) into pol's Roles, ReadOnly, DefaultRoles and NearMisses.
func (d *decoder) declareRoles(o obj, pol *Policy) {
	pol.Roles, pol.ReadOnly = slices.Clone(DefaultRoleNames), slices.Clone(DefaultReadOnlyRoles)
	var at []Position
	var fields []string
	if o.has("roles") {
		pol.Roles, pol.ReadOnly = nil, nil
		for i, it := range d.seq(o.f["roles"], "roles") {
			name, field, readOnly, ok := d.role(it, index("roles", i))
			if !ok {
				continue
			}
			if slices.Contains(pol.Roles, name) {
				d.add(field, ErrDuplicate, "role %q", name)
				continue
			}
			pol.Roles = append(pol.Roles, name)
			if readOnly {
				pol.ReadOnly = append(pol.ReadOnly, name)
			}
			at, fields = append(at, d.at(field)), append(fields, field)
		}
	}
	pol.DefaultRoles = slices.DeleteFunc(slices.Clone(pol.Roles), func(r string) bool { return slices.Contains(pol.ReadOnly, r) })
	if at != nil {
		d.nearMisses(pol, at, fields)
	}
}

// nearMisses reports each declared role that may act and is one edit away
// from another declared role, or from a built-in role the policy does not
// declare (veiwer beside viewer): a misspelt role is a role of its own,
// with the rights of an actor, so the policy is refused until one of them
// is renamed. A role declared read-only can do no harm, so it is let be.
func (d *decoder) nearMisses(pol *Policy, at []Position, fields []string) {
	roles := pol.Roles
	builtIn := slices.DeleteFunc(slices.Clone(DefaultRoleNames), func(b string) bool { return slices.Contains(roles, b) })
	for i, r := range roles {
		if slices.Contains(pol.ReadOnly, r) {
			continue
		}
		for j, other := range roles {
			if j == i || !OneEditApart(r, other) {
				continue
			}
			d.add(fields[i], ErrBadName, "role %q is one edit from role %q declared at %d:%d (%s): a misspelling? Rename one of them",
				r, other, at[j].Line, at[j].Column, fields[j])
			break
		}
		if b := NearRole(r, builtIn); b != "" {
			what := ""
			if slices.Contains(DefaultReadOnlyRoles, b) {
				what = ", read-only by default"
			}
			d.add(fields[i], ErrBadName, "role %q is one edit from the built-in role %q%s: a misspelling? Rename it, or declare it {name: %s, read_only: true} if it is a read-only role of its own",
				r, b, what, r)
		}
	}
}

// role decodes one entry of roles: a name, or a mapping {name, read_only}.
// It returns the name, the path of the name and whether the role is
// read-only (by default only the DefaultReadOnlyRoles are).
func (d *decoder) role(n ast.Node, path string) (name, field string, readOnly, ok bool) {
	if _, isMap := d.resolve(n, path).(*ast.MappingNode); !isMap {
		name, ok = d.name(n, path)
		return name, path, slices.Contains(DefaultReadOnlyRoles, name), ok
	}
	o, isObj := d.obj(n, path, roleKeys)
	if !isObj {
		return "", path, false, false
	}
	field = join(path, "name")
	o.require("name", "the role's name, such as auditor")
	if name, ok = d.name(o.f["name"], field); !ok {
		return "", field, false, false
	}
	readOnly = slices.Contains(DefaultReadOnlyRoles, name)
	if o.has("read_only") {
		readOnly = o.boolean("read_only")
	}
	return name, field, readOnly, true
}

// MayAct reports whether a caller of role may call do_* (and start_*)
// under the policy: the role is declared and not read-only. A nil policy
// knows the DefaultRoleNames, of which the DefaultReadOnlyRoles only read.
func (p *Policy) MayAct(role string) bool {
	roles, readOnly := DefaultRoleNames, DefaultReadOnlyRoles
	if p != nil {
		roles, readOnly = p.Roles, p.ReadOnly
	}
	return slices.Contains(roles, role) && !slices.Contains(readOnly, role)
}

// NearRole returns the first of among one edit away from role ("" for
// none): the role a misspelt one was meant to be.
func NearRole(role string, among []string) string {
	for _, r := range among {
		if OneEditApart(role, r) {
			return r
		}
	}
	return ""
}

// didYouMean returns `; did you mean "viewer"?` for a role one edit from
// one of among, else "".
func didYouMean(role string, among []string) string {
	if r := NearRole(role, among); r != "" {
		return fmt.Sprintf("; did you mean %q?", r)
	}
	return ""
}

// OneEditApart reports whether a and b are at Damerau-Levenshtein distance
// exactly 1: one character inserted, deleted or substituted, or two
// adjacent characters transposed. Names that differ only in one digit
// (pump1, pump2) are deliberate numbering, not a misspelling: false.
func OneEditApart(a, b string) bool {
	x, y := []rune(a), []rune(b)
	if len(x) < len(y) {
		x, y = y, x
	}
	switch len(x) - len(y) {
	case 1: // one deletion from x gives y
		i := 0
		for i < len(y) && x[i] == y[i] {
			i++
		}
		return slices.Equal(x[i+1:], y[i:])
	case 0:
		var diff []int
		for i := range x {
			if x[i] != y[i] {
				diff = append(diff, i)
			}
		}
		switch {
		case len(diff) == 1:
			return !isDigit(x[diff[0]]) || !isDigit(y[diff[0]])
		case len(diff) == 2 && diff[1] == diff[0]+1:
			return x[diff[0]] == y[diff[1]] && x[diff[1]] == y[diff[0]]
		}
	}
	return false
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }
