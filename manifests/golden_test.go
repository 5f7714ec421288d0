package manifests

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*/want.err from the current output")

// goldenCases returns the case folders under testdata: each holds
// manifest.yml and want.err, the exact error text (empty for a valid
// manifest).
func goldenCases(t testing.TB) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("testdata", "*", "manifest.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no golden cases in testdata")
	}
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	return dirs
}

// mustLoad loads the manifest at testdata/<path...>, stopping the test on
// any problem.
func mustLoad(t testing.TB, path ...string) *Manifest {
	t.Helper()
	m, err := Load(filepath.Join(append([]string{"testdata"}, path...)...))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// validPolicy is testdata/policy/valid/policy.yml, loaded against m,
// testdata/policy/base.yml.
func validPolicy(t testing.TB) (m *Manifest, p *Policy) {
	t.Helper()
	m = mustLoad(t, "policy", "base.yml")
	p, err := LoadPolicy(filepath.Join("testdata", "policy", "valid", "policy.yml"), m)
	if err != nil {
		t.Fatal(err)
	}
	return m, p
}

// errorText is the error as want.err holds it: one line per problem.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error() + "\n"
}

func TestGolden(t *testing.T) {
	for _, dir := range goldenCases(t) {
		compareGolden(t, filepath.Join(dir, "manifest.yml"), func(data []byte) (bool, error) {
			m, err := Parse("manifest.yml", data)
			return m != nil, err
		})
	}
}

// compareGolden parses the case file with parse (which reports whether it
// returned a value, and its error) and compares the error text with
// want.err beside the file (rewritten with -update); the value and the
// error must exclude each other, and every error must be well formed.
func compareGolden(t *testing.T, file string, parse func(data []byte) (bool, error)) {
	t.Helper()
	dir := filepath.Dir(file)
	t.Run(filepath.Base(dir), func(t *testing.T) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		got, perr := parse(data)
		text := errorText(perr)
		wantFile := filepath.Join(dir, "want.err")
		if *update {
			if err := os.WriteFile(wantFile, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(wantFile)
		if err != nil {
			t.Fatal(err)
		}
		if text != string(want) {
			t.Errorf("parsing %s, errors:\n%s\nwant:\n%s", file, text, want)
		}
		if (perr == nil) != got {
			t.Errorf("parsing %s: a value %t with error %v; want exactly one of them", file, got, perr)
		}
		checkErrors(t, perr)
	})
}

// checkErrors checks the shape every Parse error must have: a join of
// *Error values, sorted, positioned, each wrapping one sentinel.
func checkErrors(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Parse error %T is not a join", err)
	}
	var prev *Error
	for _, e := range joined.Unwrap() {
		pe, ok := e.(*Error)
		if !ok {
			t.Fatalf("Parse error %T (%v) is not *Error", e, e)
		}
		if pe.Pos.Line < 1 || pe.Pos.Column < 1 {
			t.Errorf("%v: position %d:%d, want line and column >= 1", pe, pe.Pos.Line, pe.Pos.Column)
		}
		if pe.Field == "" && !errors.Is(pe, ErrSyntax) {
			t.Errorf("%v: empty Field on a non-syntax error", pe)
		}
		n := 0
		for _, s := range sentinels {
			if errors.Is(pe, s) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%v: wraps %d sentinels, want 1", pe, n)
		}
		if prev != nil && (pe.Pos.Line < prev.Pos.Line || pe.Pos.Line == prev.Pos.Line && pe.Pos.Column < prev.Pos.Column) {
			t.Errorf("%v after %v: not sorted by position", pe, prev)
		}
		prev = pe
	}
}

var sentinels = []error{ErrSyntax, ErrType, ErrUnknownField, ErrUnknownValue, ErrMissing,
	ErrDuplicate, ErrBadReference, ErrBadName, ErrRange, ErrNotAllowed, ErrUnsupported}

func TestExamplesLoad(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("examples", "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	for _, f := range files {
		if IsCompanion(f) {
			continue // a policy file
		}
		if data, err := os.ReadFile(f); err == nil && IsScenario(data) {
			continue // a scenario, see TestExampleScenario
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			m, err := Load(f)
			if err != nil {
				t.Fatalf("Load(%s):\n%v", f, err)
			}
			if m.File != f || m.Version != 1 || m.Gateway == "" || len(m.Capabilities) == 0 {
				t.Errorf("Load(%s) = File %q, Version %d, Gateway %q, %d capabilities", f, m.File, m.Version, m.Gateway, len(m.Capabilities))
			}
			for _, d := range m.Devices {
				for _, r := range d.Registers {
					if r.ByteOrder == "" || r.Scale == 0 {
						t.Errorf("Load(%s): register %s.%s has ByteOrder %q, Scale %g; want defaults filled", f, d.Name, r.Name, r.ByteOrder, r.Scale)
					}
				}
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "absent.yml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(absent) = %v, want an error wrapping os.ErrNotExist", err)
	}
	if !strings.HasPrefix(err.Error(), "load manifest: ") {
		t.Errorf("Load(absent) = %q, want the prefix \"load manifest: \"", err)
	}
}
