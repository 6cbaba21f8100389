package loom_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMESnippetsAreExercised keeps README.md from drifting: every ```go
// block in it must appear, line for line (leading indentation and blank
// lines aside), in a _test.go file of the module, inside a function that
// runs: a Test function, an Example function with an "// Output:" comment,
// or a func main that the file's TestMain runs. So every snippet compiles,
// and runs, with the code it shows.
//
// To add a README snippet, paste it into such a function (an Example with
// its output is best) in the package it is about. A snippet that is an
// import block shows the imports of the snippet right after it: each of
// its lines must be imported by the file that exercises that snippet.
func TestREADMESnippetsAreExercised(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	snippets := goBlocks(string(readme))
	if len(snippets) == 0 {
		t.Fatal("README.md has no ```go blocks; the extraction is broken")
	}
	var files []testFile
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, "_test.go") && path != "readme_test.go" {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files = append(files, testFile{path: path, lines: strings.Split(string(b), "\n")})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range snippets {
		if s.lines[0] == "import (" {
			if i+1 == len(snippets) {
				t.Errorf("README.md:%d: an import block with no snippet after it", s.line)
				continue
			}
			where, ok := exercised(snippets[i+1], files)
			if ok && importsAll(files, where, s.lines) {
				t.Logf("README.md:%d: the imports of the next snippet, all imported in %s", s.line, where)
			} else {
				t.Errorf("README.md:%d: the import block is not that of the file exercising the snippet after it (README.md:%d)", s.line, snippets[i+1].line)
			}
			continue
		}
		if where, ok := exercised(s, files); ok {
			t.Logf("README.md:%d is exercised in %s", s.line, where)
			continue
		}
		t.Errorf("README.md:%d: the Go snippet starting %q is not exercised by any test: "+
			"paste it verbatim (indentation aside) into an Example function with an // Output: comment, or a Test function, "+
			"in a _test.go file of the package it shows", s.line, s.lines[0])
	}
}

// snippet is a ```go block of the README, as its non-blank lines without
// leading indentation.
type snippet struct {
	line  int // of the opening fence
	lines []string
}

type testFile struct {
	path  string
	lines []string
}

func goBlocks(md string) []snippet {
	var out []snippet
	var cur *snippet
	for i, l := range strings.Split(md, "\n") {
		switch {
		case cur == nil && strings.TrimSpace(l) == "```go":
			cur = &snippet{line: i + 1}
		case cur != nil && strings.TrimSpace(l) == "```":
			if len(cur.lines) > 0 {
				out = append(out, *cur)
			}
			cur = nil
		case cur != nil:
			if n := normalize(l); n != "" {
				cur.lines = append(cur.lines, n)
			}
		}
	}
	return out
}

func normalize(line string) string { return strings.TrimSpace(line) }

var (
	topFunc   = regexp.MustCompile(`^func (\w+)\(`)
	outputTag = regexp.MustCompile(`^\s*// (Unordered output|Output):`)
)

// exercised reports where the snippet appears inside a function that runs.
func exercised(s snippet, files []testFile) (string, bool) {
	for _, f := range files {
		// Non-blank lines and their line numbers.
		var norm []string
		var at []int
		for i, l := range f.lines {
			if n := normalize(l); n != "" {
				norm = append(norm, n)
				at = append(at, i)
			}
		}
		for i := 0; i+len(s.lines) <= len(norm); i++ {
			if !equalAt(norm[i:], s.lines) {
				continue
			}
			start, end := at[i], at[i+len(s.lines)-1]
			if fn, ok := runs(f, start, end); ok {
				return f.path + " (" + fn + ")", true
			}
		}
	}
	return "", false
}

func equalAt(have, want []string) bool {
	for j, w := range want {
		if have[j] != w {
			return false
		}
	}
	return true
}

// runs reports whether lines start..end of f lie in a top-level function
// that the test binary runs, and names it.
func runs(f testFile, start, end int) (string, bool) {
	// A snippet that is itself a whole func main, run by the file's TestMain.
	if m := topFunc.FindStringSubmatch(f.lines[start]); m != nil && m[1] == "main" {
		return "main", strings.Contains(strings.Join(f.lines, "\n"), "func TestMain(") && callsMain(f)
	}
	name, from := "", -1
	for i := start; i >= 0; i-- {
		if m := topFunc.FindStringSubmatch(f.lines[i]); m != nil {
			name, from = m[1], i
			break
		}
	}
	if from < 0 {
		return "", false
	}
	to := len(f.lines)
	for i := from + 1; i < len(f.lines); i++ {
		if f.lines[i] == "}" {
			to = i
			break
		}
	}
	if end > to {
		return "", false
	}
	switch {
	case strings.HasPrefix(name, "Test"):
		return name, true
	case strings.HasPrefix(name, "Example"):
		for _, l := range f.lines[from:to] {
			if outputTag.MatchString(l) {
				return name, true
			}
		}
	}
	return "", false
}

// callsMain reports whether the file's TestMain calls main().
func callsMain(f testFile) bool {
	in := false
	for _, l := range f.lines {
		switch {
		case strings.HasPrefix(l, "func TestMain("):
			in = true
		case in && l == "}":
			return false
		case in && strings.Contains(l, "main()"):
			return true
		}
	}
	return false
}

// importsAll reports whether the file named in where ("path (func)")
// imports every line of an import block snippet.
func importsAll(files []testFile, where string, lines []string) bool {
	path, _, _ := strings.Cut(where, " (")
	for _, f := range files {
		if f.path != path {
			continue
		}
		imported := map[string]bool{}
		in := false
		for _, l := range f.lines {
			switch {
			case l == "import (":
				in = true
			case in && l == ")":
				in = false
			case in:
				imported[normalize(l)] = true
			}
		}
		for _, l := range lines[1:] {
			if l != ")" && !imported[l] {
				return false
			}
		}
		return true
	}
	return false
}
