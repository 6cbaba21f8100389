package layers

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/loomkit/loom"

// layer gives each package (by path prefix within the module, longest
// match wins) its layer, bottom to top.
var layer = map[string]int{
	"model":             0,
	"event":             0,
	"model/retry":       0,
	"model/fallback":    0, // wraps any model.LLM; agent configs (2) build chains
	"cost":              0,
	"internal":          1,
	"session":           1,
	"artifact":          1,
	"memory":            1,
	"tool":              1,
	"credential":        1, // users' credentials sealed per user; the OAuth2 flow of tools
	"codeexec":          1, // runs model-written code; imports only the standard library and genai
	"storage":           1, // opens the layer-1 backends by URL; imports nothing higher
	"agent":             2,
	"agent/agentconfig": 2, // builds agents and tools from config files; models come from the caller
	"tool/":             2, // the ready-made tools
	"plugin":            3,
	"runner":            3,
	"conformance":       3, // ADK conformance protocol: plugins, case files, HTTP client
	"durable":           3, // durable execution engines drive runners
	"model/":            4, // the adapters and what only they use
	"model/provider":    4, // picks an adapter by name, so it sits with them
	"eval":              4, // runs apps through runner; server (5) serves it
	"server":            5,
	"cli":               6,
	"cmd":               6,
	"examples":          6,
	"bench":             6,
	"internal/layers":   6, // checks over the whole module
	"internal/docs":     6,
	".":                 6, // the module root holds only the README's tests
}

// allowed lists the imports that cross layers upwards on purpose.
var allowed = map[[2]string]string{
	{"tool/agenttool", "runner"}: "an agent used as a tool runs in a child runner",
}

func layerOf(pkg string) (int, bool) {
	best, l := "", -1
	for prefix, n := range layer {
		match := pkg == strings.TrimSuffix(prefix, "/") && !strings.HasSuffix(prefix, "/") ||
			strings.HasPrefix(pkg, strings.TrimSuffix(prefix, "/")+"/")
		if match && len(prefix) > len(best) {
			best, l = prefix, n
		}
	}
	return l, l >= 0
}

// TestLayers checks every non-test import of every package of the module.
func TestLayers(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // no Go package here
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		own, ok := layerOf(rel)
		if !ok {
			t.Errorf("package %s has no layer in layers_test.go", rel)
			return nil
		}
		for _, imp := range p.Imports {
			dep, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			l, ok := layerOf(dep)
			if !ok {
				t.Errorf("%s imports %s, which has no layer", rel, dep)
				continue
			}
			if l > own && allowed[[2]string{rel, dep}] == "" {
				t.Errorf("%s (layer %d) imports %s (layer %d)", rel, own, dep, l)
			}
		}
		checked++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("checked only %d packages; is the module root right?", checked)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s", root)
	}
}
