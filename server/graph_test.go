package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session/memsession"
)

func graphApp(t *testing.T) server.Config {
	t.Helper()
	id := func(name string) *graph.Node {
		return graph.Func(name, func(_ context.Context, _ *graph.Context, in string) (string, error) { return in, nil })
	}
	inner, err := graph.New(graph.Config{Name: "inner", Description: "a nested graph", Nodes: []*graph.Node{id("x"), id("y")},
		Edges: []graph.Edge{{From: "x", To: "y"}, {From: "y", To: "x", Route: "again", Max: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	outer, err := graph.New(graph.Config{Name: "outer", Description: "the \"root\" graph",
		Nodes: []*graph.Node{id("classify"), graph.FromAgent(inner), id("other"), graph.Join("both")},
		Edges: []graph.Edge{{From: "classify", To: "inner", Route: "deep"}, {From: "classify", To: "other", Route: "deep"},
			{From: "inner", To: "both"}, {From: "other", To: "both"}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "graphs", Agent: outer, Sessions: memsession.NewService()})
	if err != nil {
		t.Fatal(err)
	}
	return server.Config{Apps: []*runner.Runner{r}}
}

// TestBuildGraphGolden checks build_graph and build_graph_image against
// testdata/build_graph.golden: the agent tree with each workflow's graph,
// DOT drawings keyed by path ("" for the app's root), one drawing for
// ?node=, the dark palette, and 404s for unknown apps and nodes.
func TestBuildGraphGolden(t *testing.T) {
	f := newFixture(t, graphApp(t))
	var out strings.Builder
	for _, path := range []string{
		"/dev/apps/graphs/build_graph",
		"/dev/apps/graphs/build_graph_image",
		"/dev/apps/graphs/build_graph_image?dark_mode=true&node=outer/inner@1",
		"/dev/apps/demo/build_graph",
		"/dev/apps/demo/build_graph_image",
		"/dev/apps/nope/build_graph",
		"/dev/apps/graphs/build_graph_image?node=nope",
	} {
		rec := f.do(t, "GET", path, "")
		fmt.Fprintf(&out, "GET %s\n%d %s\n", path, rec.Code, rec.Header().Get("Content-Type"))
		var v any
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, _ := json.MarshalIndent(v, "", "  ")
		out.Write(b)
		out.WriteString("\n\n")
		if strings.Contains(path, "nope") && rec.Code != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", path, rec.Code)
		}
	}
	golden := filepath.Join("testdata", "build_graph.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != string(want) {
		t.Errorf("responses differ from %s (run with -update after checking the change):\n%s", golden, lineDiff(string(want), got))
	}
}

// TestBuildGraphEveryStart: a workflow whose edges from its entry start
// two nodes draws an edge from the start to each.
func TestBuildGraphEveryStart(t *testing.T) {
	id := func(name string) *graph.Node {
		return graph.Func(name, func(_ context.Context, _ *graph.Context, in string) (string, error) { return in, nil })
	}
	w, err := graph.New(graph.Config{Name: "two", Nodes: []*graph.Node{id("a"), id("b")},
		Edges: []graph.Edge{{From: graph.Entry, To: "a"}, {From: graph.Entry, To: "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "two", Agent: w, Sessions: memsession.NewService()})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, server.Config{Apps: []*runner.Runner{r}})
	rec := f.do(t, "GET", "/dev/apps/two/build_graph_image", "")
	var img map[string]struct {
		DotSrc string `json:"dotSrc"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &img); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"__start__" -> "a";`, `"__start__" -> "b";`} {
		if !strings.Contains(img[""].DotSrc, want) {
			t.Errorf("the drawing lacks %s:\n%s", want, img[""].DotSrc)
		}
	}
	rec = f.do(t, "GET", "/dev/apps/two/build_graph", "")
	if n := strings.Count(rec.Body.String(), `"from_node":{"name":"__START__"`); n != 2 {
		t.Errorf("build_graph has %d edges from the start, want 2:\n%s", n, rec.Body.String())
	}
}
