package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/promcp/promcp-device/manifests"
)

// TestDocsUpToDate: the checked-in docs/manifest-reference.md and
// docs/schema/*.json are what the generator writes from the code, so a
// key, model, bus kind or flag added without regenerating fails here.
func TestDocsUpToDate(t *testing.T) {
	files, err := generatedDocs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		old, err := os.ReadFile(filepath.Join("../../docs", name))
		switch {
		case err != nil:
			t.Errorf("docs/%s: %v: run %s to generate it", name, err, regenerate)
		case !bytes.Equal(old, files[name]):
			t.Errorf("docs/%s differs from what the code generates: run %s to regenerate", name, regenerate)
		}
	}
	schemas, _ := filepath.Glob("../../docs/schema/*.json")
	for _, s := range schemas {
		if _, ok := files[schemaDir+"/"+filepath.Base(s)]; !ok {
			t.Errorf("docs/schema/%s is not generated any more: remove it", filepath.Base(s))
		}
	}
}

// handWritten is the README and the docs pages written by hand (not the
// generated reference, which names everything by construction).
func handWritten(t *testing.T) string {
	t.Helper()
	pages, _ := filepath.Glob("../../docs/*.md")
	text := string(readFile(t, "../../README.md"))
	for _, p := range pages {
		if filepath.Base(p) != referenceFile {
			text += string(readFile(t, p))
		}
	}
	return text
}

// TestDocsNameEveryFlagModelAndBusKind: every flag of every command, every
// device model and every bus kind in the code is named on a page written
// by hand (README.md or docs/*.md besides the generated reference), so a
// new one comes with its documentation.
func TestDocsNameEveryFlagModelAndBusKind(t *testing.T) {
	text := handWritten(t)
	cmds, err := commandFlags(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		for _, f := range c.Flags {
			if !regexp.MustCompile("(^|[\\s`(\\[|])--?" + regexp.QuoteMeta(f.Name) + `\b`).MatchString(text) {
				t.Errorf("promcp-device %s --%s is named nowhere in README.md or docs/*.md: document it on the page of its subject", c.Name, f.Name)
			}
		}
	}
	ref := manifests.Reference()
	for _, m := range ref.Models {
		if !strings.Contains(text, "`"+m.Name+"`") {
			t.Errorf("model %s is named (as `%s`) nowhere in README.md or docs/*.md: describe it in docs/devices.md", m.Name, m.Name)
		}
	}
	for _, k := range ref.BusKinds {
		if !strings.Contains(text, "`"+k+"`") {
			t.Errorf("bus kind %s is named (as `%s`) nowhere in README.md or docs/*.md: describe it in docs/devices.md", k, k)
		}
	}
}

// TestREADMEKeepsTheTwoCommands: CI (.ci/run) and the checkers run the
// README's two commands exactly as written.
func TestREADMEKeepsTheTwoCommands(t *testing.T) {
	readme := string(readFile(t, "../../README.md"))
	for _, cmd := range []string{
		"go run ./cmd/promcp-device serve --sim --manifest manifests/examples/greenhouse.yml --http 127.0.0.1:8080",
		"./scripts/test",
	} {
		if !strings.Contains(readme, "```sh\n"+cmd+"\n```") {
			t.Errorf("README.md no longer shows %q in a sh block of its own", cmd)
		}
	}
}

var schemaLine = regexp.MustCompile(`^# yaml-language-server: \$schema=(\S+)\n`)

// TestExamplesMatchTheirSchemas: every example file names its JSON Schema
// on its first line (a path relative to the file), the schema is the one
// of the file's kind, and the file validates against it.
func TestExamplesMatchTheirSchemas(t *testing.T) {
	files, _ := filepath.Glob("../../manifests/examples/*.yml")
	more, _ := filepath.Glob("../../manifests/examples/*/*.yml")
	files = append(files, more...)
	if len(files) < 20 {
		t.Fatalf("found %d example files; want the examples of manifests/examples", len(files))
	}
	c := jsonschema.NewCompiler()
	for _, f := range files {
		data := readFile(t, f)
		m := schemaLine.FindSubmatch(data)
		if m == nil {
			t.Errorf("%s: no first line # yaml-language-server: $schema=PATH", f)
			continue
		}
		path := filepath.Join(filepath.Dir(f), string(m[1]))
		if want := schemaOfKind(manifests.KindOf(data), f); filepath.Base(path) != want {
			t.Errorf("%s names schema %s; want %s", f, m[1], want)
		}
		sch, err := c.Compile(path)
		if err != nil {
			t.Errorf("%s: schema %s: %v", f, m[1], err)
			continue
		}
		if err := validateYAML(sch, data); err != nil {
			t.Errorf("%s does not validate against %s: %v", f, m[1], err)
		}
	}
}

// schemaOfKind is the schema file of a kind of file. A site test with a
// scenario: key is told a scenario by KindOf (it looks for scenario: first),
// so the site-tests directory decides there.
func schemaOfKind(k manifests.FileKind, file string) string {
	if filepath.Base(filepath.Dir(file)) == "site-tests" {
		return "site-test.json"
	}
	switch k {
	case manifests.KindPolicy:
		return "policy.json"
	case manifests.KindFleet:
		return "fleet.json"
	case manifests.KindScenario:
		return "scenario.json"
	case manifests.KindSiteTest:
		return "site-test.json"
	}
	return "manifest.json"
}

func validateYAML(sch *jsonschema.Schema, data []byte) error {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

// TestSchemasRefuseWhatTheLoaderRefuses: the schemas are not vacuous: a
// misspelt key and a bus kind that does not exist fail them, as they fail
// the loader.
func TestSchemasRefuseWhatTheLoaderRefuses(t *testing.T) {
	sch, err := jsonschema.NewCompiler().Compile("../../docs/schema/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	good := "version: 1\ngateway: g\nbuses: [{name: b, kind: gpio}]\n"
	if err := validateYAML(sch, []byte(good)); err != nil {
		t.Fatalf("a valid manifest fails: %v", err)
	}
	for _, bad := range []string{
		"version: 1\ngateway: g\nbusses: []\n",
		"version: 1\ngateway: g\nbuses: [{name: b, kind: can}]\n",
		"version: 1\ngateway: g\ndevices: [{name: d, bus: b, model: sht3x, adress: 0x44}]\n",
	} {
		if validateYAML(sch, []byte(bad)) == nil {
			t.Errorf("the schema accepts %q", bad)
		}
		if _, err := manifests.Parse("bad.yml", []byte(bad)); err == nil {
			t.Errorf("the loader accepts %q", bad)
		}
	}
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	slugDrop  = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
)

// anchors are the GitHub anchors of a Markdown page's headings (fenced
// code left out).
func anchors(page string) map[string]bool {
	var prose strings.Builder
	fenced := false
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			prose.WriteString(l + "\n")
		}
	}
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range mdHeading.FindAllStringSubmatch(prose.String(), -1) {
		s := strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), ""), " ", "-")
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestDocsLinksResolve: every relative link of README.md and docs/*.md
// names a file of the repository, and every #anchor a heading of its page.
func TestDocsLinksResolve(t *testing.T) {
	pages, _ := filepath.Glob("../../docs/*.md")
	pages = append(pages, "../../README.md")
	for _, p := range pages {
		text := string(readFile(t, p))
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				path := p
				if file != "" {
					path = filepath.Join(filepath.Dir(p), file)
					if _, err := os.Stat(path); err != nil {
						t.Errorf("%s: link %s: %v", p, target, err)
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(path, ".md") && !anchors(string(readFile(t, path)))[anchor] {
					t.Errorf("%s: link %s: no heading with anchor #%s in %s", p, target, anchor, path)
				}
			}
		}
	}
}
