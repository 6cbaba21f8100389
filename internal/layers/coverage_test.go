package layers

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// packageDirs returns every directory of the module that holds Go files
// (test-only packages included), relative to the module root, sorted.
func packageDirs(t *testing.T) []string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dirs := make([]string, 0, len(seen))
	for d := range seen {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	if len(dirs) < 20 {
		t.Fatalf("found only %d package directories; is the module root right?", len(dirs))
	}
	return dirs
}

// matchOf returns the table entry that gives pkg its layer, or "".
func matchOf(pkg string) string {
	best := ""
	for prefix := range layer {
		match := pkg == strings.TrimSuffix(prefix, "/") && !strings.HasSuffix(prefix, "/") ||
			strings.HasPrefix(pkg, strings.TrimSuffix(prefix, "/")+"/")
		if match && len(prefix) > len(best) {
			best = prefix
		}
	}
	return best
}

// TestEveryPackageHasLayer checks that every package directory of the module,
// including test-only ones, gets its layer from the table, and that every
// entry of the table still gives a layer to some package.
func TestEveryPackageHasLayer(t *testing.T) {
	used := map[string]bool{}
	for _, dir := range packageDirs(t) {
		m := matchOf(dir)
		if m == "" {
			t.Errorf("package %s has no layer: add it to the table in layers_test.go and to docs/ARCHITECTURE.md", dir)
			continue
		}
		used[m] = true
	}
	for prefix := range layer {
		if !used[prefix] {
			t.Errorf("table entry %q gives a layer to no package", prefix)
		}
	}
	// A new top-level package is not covered by any entry.
	for _, pkg := range []string{"evals", "newpkg/sub", "runners", "tools"} {
		if _, ok := layerOf(pkg); ok {
			t.Errorf("layerOf(%q) found a layer for a package the table does not list", pkg)
		}
	}
}

// TestArchitectureDoc checks that docs/ARCHITECTURE.md names every entry of
// the layer table, every package directory of the module and every allowed
// upward import, each in backquotes.
func TestArchitectureDoc(t *testing.T) {
	b, err := os.ReadFile("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	mentions := func(name string) bool {
		return strings.Contains(doc, "`"+name+"`") || strings.Contains(doc, "`"+name+"/`")
	}
	for prefix := range layer {
		if !mentions(strings.TrimSuffix(prefix, "/")) {
			t.Errorf("docs/ARCHITECTURE.md does not mention the table entry `%s`", prefix)
		}
	}
	for _, dir := range packageDirs(t) {
		if !mentions(dir) {
			t.Errorf("docs/ARCHITECTURE.md does not mention the package `%s`", dir)
		}
	}
	for pair := range allowed {
		if !strings.Contains(doc, "`"+pair[0]+"` → `"+pair[1]+"`") {
			t.Errorf("docs/ARCHITECTURE.md does not explain the upward import `%s` → `%s`", pair[0], pair[1])
		}
	}
}
