package manifests

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Sentinel errors: the classes of manifest problems. Every problem that Load
// and Parse report is an *Error whose Err wraps exactly one of these, so
// callers branch with errors.Is; the message adds what was found and what was
// expected.
var (
	// ErrSyntax is malformed YAML. Its *Error has an empty Field.
	ErrSyntax = errors.New("syntax error")
	// ErrType is a value of the wrong YAML type, such as a list where a
	// string belongs or "2 seconds" where a duration belongs.
	ErrType = errors.New("wrong type")
	// ErrUnknownField is a key that the format does not define.
	ErrUnknownField = errors.New("unknown field")
	// ErrUnknownValue is a value outside a closed set, such as a bus kind.
	ErrUnknownValue = errors.New("unknown value")
	// ErrMissing is a required key that is absent or null.
	ErrMissing = errors.New("missing")
	// ErrDuplicate is a name, tool, address or pin declared twice.
	ErrDuplicate = errors.New("duplicate")
	// ErrBadReference names a bus, device, register or anchor that the
	// manifest does not declare.
	ErrBadReference = errors.New("undefined")
	// ErrBadName is a name or tool name that breaks the naming rules.
	ErrBadName = errors.New("bad name")
	// ErrRange is a number or duration outside its allowed range.
	ErrRange = errors.New("out of range")
	// ErrNotAllowed is a key or value that is valid on its own but not in
	// its context: an address on a GPIO device, a unit on a boolean, an
	// action on a read-only channel.
	ErrNotAllowed = errors.New("not allowed")
)

// Position is a place in a manifest file. Line and Column count from 1; a
// zero Line means the position is unknown.
type Position struct {
	File   string
	Line   int
	Column int
}

// String returns "file:line:column", as go/token.Position does: "line:column"
// without a file, "file" without a line, "-" with neither.
func (p Position) String() string {
	s := p.File
	if p.Line > 0 {
		if s != "" {
			s += ":"
		}
		s += strconv.Itoa(p.Line)
		if p.Column > 0 {
			s += ":" + strconv.Itoa(p.Column)
		}
	}
	if s == "" {
		s = "-"
	}
	return s
}

// Error is one problem in a manifest. Load and Parse return every problem
// they find, sorted by position, joined with errors.Join; use errors.As to get
// the first, or the Unwrap() []error method of the joined error to get all.
type Error struct {
	// Pos is the offending node. For a missing key it is the mapping that
	// lacks the key.
	Pos Position
	// Field is the path of the offending key from the document root, such
	// as "devices[2].registers[0].byte_order"; empty for ErrSyntax.
	Field string
	// Err wraps one of the sentinels (ErrUnknownValue, ...) with detail.
	Err error
}

// Error returns "file:line:col: field: message".
func (e *Error) Error() string {
	if e.Field == "" {
		return e.Pos.String() + ": " + e.Err.Error()
	}
	return e.Pos.String() + ": " + e.Field + ": " + e.Err.Error()
}

// Unwrap returns Err, which wraps the problem's sentinel.
func (e *Error) Unwrap() error { return e.Err }

// problems collects the errors of one Parse.
type problems struct {
	file string
	list []*Error
}

func (p *problems) add(pos Position, field string, sentinel error, format string, args ...any) {
	pos.File = p.file
	var err error
	if format == "" {
		err = sentinel
	} else {
		sep := " "
		if strings.HasPrefix(format, ":") {
			sep = ""
		}
		err = fmt.Errorf("%w"+sep+format, append([]any{sentinel}, args...)...)
	}
	p.list = append(p.list, &Error{Pos: pos, Field: field, Err: err})
}

// err returns every problem sorted by position, joined, or nil.
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	slices.SortStableFunc(p.list, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Column, b.Pos.Column),
			cmp.Compare(a.Field, b.Field),
			cmp.Compare(a.Err.Error(), b.Err.Error()),
		)
	})
	errs := make([]error, len(p.list))
	for i, e := range p.list {
		errs[i] = e
	}
	return errors.Join(errs...)
}
