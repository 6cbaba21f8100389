// Package docs checks that the project's documents agree with its code.
//
// TestConformanceIDs keeps docs/CONFORMANCE.md and the tests in step: every
// behaviour id a test cites is in the checklist, every id of the checklist
// is cited by at least one test, every test the checklist names exists and
// cites the id it is listed under, and every test that cites an id is named
// under it.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the module root, relative to this package's directory.
const root = "../.."

// letters are the sections of docs/CONFORMANCE.md: events, sessions,
// runner, agents, tools, graph workflows, evaluation, A2A, OpenAPI, YAML
// applications, durable execution, code execution and integrity.
const letters = "ESRATGQPOYDCI"

var (
	// idRE matches one behaviour id, or a range of them ("S1–S10").
	idRE = regexp.MustCompile(`\b([` + letters + `])([0-9]+)\b(?:\s*[–-]\s*([` + letters + `])?([0-9]+)\b)?`)
	// nameRE matches a test function named after ids: TestT3..., TestT2T3...,
	// and the lower-case test functions of the conformance suites.
	nameRE = regexp.MustCompile(`^(?:Test|test)((?:[` + letters + `][0-9]+)+)(?:[A-Z_]|$)`)
	// oneIDRE splits the ids of a test name ("T2T3").
	oneIDRE = regexp.MustCompile(`[` + letters + `][0-9]+`)
	// docIDRE matches the line that defines an id in CONFORMANCE.md.
	docIDRE = regexp.MustCompile(`^([` + letters + `][0-9]+)\. `)
	// docTestRE matches one test named on a "Tests:" line: `dir.Func`.
	docTestRE = regexp.MustCompile("`([a-z0-9_/]+)\\.([A-Za-z0-9_]+)`")
)

// notCitations lists test functions whose names look like a citation but
// are not one.
var notCitations = map[string]string{
	"plugin/telemetry.TestS1SpanTree": "S1 there is the benchmark scenario of bench/, not the session behaviour",
}

// citation is one place where test code cites an id.
type citation struct {
	id    string
	where string // "dir.Func", or "dir/file.go" for a comment outside any function
}

// ids returns the ids s names; ranges are expanded.
func ids(s string) []string {
	var out []string
	for _, m := range idRE.FindAllStringSubmatch(s, -1) {
		from, _ := strconv.Atoi(m[2])
		to := from
		if m[4] != "" && (m[3] == "" || m[3] == m[1]) {
			to, _ = strconv.Atoi(m[4])
		}
		for n := from; n <= to && n-from < 100; n++ {
			out = append(out, m[1]+strconv.Itoa(n))
		}
	}
	return out
}

// nameIDs returns the ids a test function's name starts with.
func nameIDs(name string) []string {
	m := nameRE.FindStringSubmatch(name)
	if m == nil {
		return nil
	}
	return oneIDRE.FindAllString(m[1], -1)
}

// isTestCode reports whether a file holds test code: a _test.go file, or a
// file of a conformance suite (a package directory named ...test).
func isTestCode(rel string) bool {
	return strings.HasSuffix(rel, "_test.go") ||
		strings.HasSuffix(rel, ".go") && strings.HasSuffix(filepath.Base(filepath.Dir(rel)), "test")
}

// scan parses the module's test code and returns every citation, and the
// set of functions ("dir.Func") it declares.
func scan(t *testing.T) ([]citation, map[string]bool) {
	t.Helper()
	var cites []citation
	funcs := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if !isTestCode(rel) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		used := map[*ast.CommentGroup]bool{}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil {
				continue
			}
			where := dir + "." + fn.Name.Name
			funcs[where] = true
			for _, id := range nameIDs(fn.Name.Name) {
				if notCitations[where] == "" {
					cites = append(cites, citation{id, where})
				}
			}
			for _, cg := range f.Comments {
				inside := cg == fn.Doc || cg.Pos() >= fn.Pos() && cg.End() <= fn.End()
				if !inside {
					continue
				}
				used[cg] = true
				if text := cg.Text(); strings.Contains(text, "CONFORMANCE") {
					for _, id := range ids(text) {
						cites = append(cites, citation{id, where})
					}
				}
			}
		}
		for _, cg := range f.Comments {
			if text := cg.Text(); !used[cg] && strings.Contains(text, "CONFORMANCE") {
				for _, id := range ids(text) {
					cites = append(cites, citation{id, rel})
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(funcs) < 100 {
		t.Fatalf("found only %d test functions; is the module root right?", len(funcs))
	}
	return cites, funcs
}

// checklist parses docs/CONFORMANCE.md: the ids in order, and the tests
// named under each.
func checklist(t *testing.T) ([]string, map[string][]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "CONFORMANCE.md"))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	tests := map[string][]string{}
	cur := ""
	for line := range strings.SplitSeq(string(b), "\n") {
		if m := docIDRE.FindStringSubmatch(line); m != nil {
			cur = m[1]
			if _, dup := tests[cur]; dup {
				t.Errorf("CONFORMANCE.md defines %s twice", cur)
			}
			order = append(order, cur)
			tests[cur] = nil
			continue
		}
		if cur != "" && strings.HasPrefix(strings.TrimSpace(line), "Tests:") {
			for _, m := range docTestRE.FindAllStringSubmatch(line, -1) {
				tests[cur] = append(tests[cur], m[1]+"."+m[2])
			}
		}
	}
	if len(order) < 40 {
		t.Fatalf("CONFORMANCE.md defines only %d ids", len(order))
	}
	return order, tests
}

// TestConformanceIDs checks that the checklist and the tests cite the same
// ids, and that the checklist names exactly the tests that cite each id.
func TestConformanceIDs(t *testing.T) {
	cites, funcs := scan(t)
	order, listed := checklist(t)

	citedBy := map[string][]string{}
	for _, c := range cites {
		if !slices.Contains(citedBy[c.id], c.where) {
			citedBy[c.id] = append(citedBy[c.id], c.where)
		}
	}

	var unknown []string
	for id, where := range citedBy {
		if _, ok := listed[id]; !ok {
			unknown = append(unknown, id+" (cited by "+strings.Join(where, ", ")+")")
		}
	}
	slices.Sort(unknown)
	for _, u := range unknown {
		t.Errorf("id cited by a test but missing from docs/CONFORMANCE.md: %s", u)
	}

	var uncited []string
	for _, id := range order {
		if len(citedBy[id]) == 0 {
			uncited = append(uncited, id)
		}
	}
	if len(uncited) > 0 {
		t.Errorf("ids of docs/CONFORMANCE.md cited by no test: %s", strings.Join(uncited, ", "))
	}

	for _, id := range order {
		for _, where := range citedBy[id] {
			if !strings.HasSuffix(where, ".go") && !slices.Contains(listed[id], where) {
				t.Errorf("%s cites %s, but docs/CONFORMANCE.md does not name it under %s", where, id, id)
			}
		}
	}

	for _, id := range order {
		if len(listed[id]) == 0 {
			t.Errorf("%s: docs/CONFORMANCE.md names no test for it", id)
		}
		for _, fn := range listed[id] {
			switch {
			case !funcs[fn]:
				t.Errorf("%s: docs/CONFORMANCE.md names %s, which is not a test function", id, fn)
			case !slices.Contains(citedBy[id], fn):
				t.Errorf("%s: docs/CONFORMANCE.md names %s, which does not cite %s (name it Test%s... or add \"CONFORMANCE %s\" to its comment)", id, fn, id, id, id)
			}
		}
	}
}

// TestIDs checks the id extraction itself.
func TestIDs(t *testing.T) {
	for s, want := range map[string]string{
		"(CONFORMANCE T2, T3)":    "T2 T3",
		"CONFORMANCE S1–S10 and":  "S1 S2 S3 S4 S5 S6 S7 S8 S9 S10",
		"R-commit, E4; X1, TS3":   "E4",
		"CONFORMANCE A1-3":        "A1 A2 A3",
		"no ids: T, 3T, TT3, s1.": "",
	} {
		if got := strings.Join(ids(s), " "); got != want {
			t.Errorf("ids(%q) = %q, want %q", s, got, want)
		}
	}
	for name, want := range map[string]string{
		"TestT2T3AnswerRunsOnce": "T2 T3",
		"testS1TempKeys":         "S1",
		"TestE4":                 "E4",
		"TestTranscript":         "",
		"TestS10x":               "",
		"TestA1OutputKey":        "A1",
		"TestS10ClosedStore":     "S10",
	} {
		if got := strings.Join(nameIDs(name), " "); got != want {
			t.Errorf("nameIDs(%q) = %q, want %q", name, got, want)
		}
	}
}
