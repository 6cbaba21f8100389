package cost_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/cost"
	"github.com/loomkit/loom/event"
)

// TestR15ParsePrices reads the same prices from YAML and JSON, and refuses
// bad files with an error that names the problem. (CONFORMANCE R15)
func TestR15ParsePrices(t *testing.T) {
	yml := "models:\n  gpt-4o: {input: 2.5, output: 10, cached_input: 1.25}\n  free: {input: 0, output: 0}\n"
	js := `{"models": {"gpt-4o": {"input": 2.5, "output": 10, "cached_input": 1.25}, "free": {"input": 0, "output": 0}}}`
	for _, src := range []string{yml, js} {
		p, err := cost.Parse([]byte(src))
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if got := p["gpt-4o"]; got != (cost.Price{Input: 2.5, Output: 10, CachedInput: 1.25}) {
			t.Errorf("gpt-4o: %+v", got)
		}
		if _, ok := p.Lookup("free"); ok {
			t.Error("an all-zero price is a price")
		}
	}
	for _, tc := range []struct{ src, want string }{
		{"", "empty document"},
		{"models: {}\n", `no "models" key`},
		{"gpt-4o: {input: 1, output: 2}\n", "field gpt-4o not found"},
		{"models:\n  gpt-4o: {input: 1, output: 2, cache: 3}\n", "field cache not found"},
		{"models:\n  gpt-4o: {input: -1, output: 2}\n", `model "gpt-4o": input price -1`},
		{"models:\n  gpt-4o: {input: .nan, output: 2}\n", `model "gpt-4o": input price NaN`},
		{"models:\n  gpt-4o: {input: 1, output: .inf}\n", `model "gpt-4o": output price +Inf`},
		{"models:\n  gpt-4o: {input: one, output: 2}\n", "cannot unmarshal"},
		{"models:\n  \"\": {input: 1, output: 2}\n", "empty name"},
		{"{not json", "cost: prices:"},
	} {
		_, err := cost.Parse([]byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", tc.src, err, tc.want)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "prices.yaml")
	if err := os.WriteFile(path, []byte("models:\n  m: {input: -2, output: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cost.Load(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "input price -2") {
		t.Errorf("Load: %v, want the file and the problem named", err)
	}
	if _, err := cost.Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

// TestR15Lookup finds a model's price under its name, a dated or numbered
// release under the longest listed name it extends, and nothing for other
// models. (CONFORMANCE R15)
func TestR15Lookup(t *testing.T) {
	p := cost.Prices{"gpt-4o": {Input: 2.5, Output: 10}, "gpt-4o-mini": {Input: 0.15, Output: 0.6}, "gemini-2.0-flash": {Input: 0.1, Output: 0.4}}
	for model, want := range map[string]float64{
		"gpt-4o": 2.5, "gpt-4o-2024-08-06": 2.5, "gpt-4o-mini": 0.15, "gpt-4o-mini-2024-07-18": 0.15,
		"gemini-2.0-flash-001": 0.1, "models/gemini-2.0-flash": 0.1,
	} {
		if got, ok := p.Lookup(model); !ok || got.Input != want {
			t.Errorf("Lookup(%q) = %v, %v; want input %v", model, got, ok, want)
		}
	}
	for _, model := range []string{"", "gpt-4", "gpt-4o-audio", "gpt-4o-", "gemini-2.0-flash-lite", "claude"} {
		if got, ok := p.Lookup(model); ok {
			t.Errorf("Lookup(%q) = %v, want no price", model, got)
		}
	}
	if _, ok := cost.Prices(nil).Lookup("gpt-4o"); ok {
		t.Error("nil prices price a model")
	}
}

// TestR15Of prices a response: uncached input, cached input (at the input
// price when no cached price is set) and output with thoughts; an unpriced
// model's tokens are counted without cost. (CONFORMANCE R15)
func TestR15Of(t *testing.T) {
	u := &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 1000, CachedContentTokenCount: 400,
		CandidatesTokenCount: 200, ThoughtsTokenCount: 50}
	p := cost.Prices{"a": {Input: 2, Output: 10, CachedInput: 0.5}, "b": {Input: 2, Output: 10}}
	got := cost.Of(u, "a", p)
	want := cost.Usage{Responses: 1, Prompt: 1000, Candidates: 200, Thoughts: 50, Cached: 400, Total: 1250,
		Cost: (600*2 + 400*0.5 + 250*10) / 1e6}
	if !same(got, want) {
		t.Errorf("Of a = %+v, want %+v", got, want)
	}
	if got := cost.Of(u, "b", p); !near(got.Cost, (1000*2+250*10)/1e6) {
		t.Errorf("Of b cost %v", got.Cost)
	}
	u.TotalTokenCount = 1300 // the provider's total wins
	got = cost.Of(u, "unknown", p)
	if got.Cost != 0 || got.Unpriced != 1 || got.Total != 1300 || got.Prompt != 1000 {
		t.Errorf("Of unknown = %+v", got)
	}
	if got := cost.Of(nil, "a", p); got != (cost.Usage{}) {
		t.Errorf("Of nil = %+v", got)
	}
}

// TestR16SessionTotals sums a session's stored usage per turn and in
// total, leaving out partial, user and imported events; a turn that called
// no model is listed with zero usage. (CONFORMANCE R16)
func TestR16SessionTotals(t *testing.T) {
	usage := func(in, out int32) *genai.GenerateContentResponseUsageMetadata {
		return &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: in, CandidatesTokenCount: out, TotalTokenCount: in + out}
	}
	ev := func(inv, author, model string, u *genai.GenerateContentResponseUsageMetadata) *event.Event {
		e := &event.Event{InvocationID: inv, Author: author}
		e.ModelVersion, e.UsageMetadata = model, u
		return e
	}
	partial := ev("i1", "a", "m", usage(999, 999))
	partial.Partial = true
	imported := ev("i0", "a", "m", usage(5000, 5000))
	imported.MarkImported()
	events := []*event.Event{
		imported,
		ev("i1", "user", "", nil),
		partial,
		ev("i1", "a", "m", usage(100, 10)),
		ev("i1", "b", "other", usage(50, 5)),
		ev("i1", "a", "", nil), // a tool response
		ev("i2", "user", "", usage(7, 7)),
		ev("i3", "user", "", nil),
		ev("i3", "a", "m-001", usage(200, 20)),
	}
	got := cost.Session(events, cost.Prices{"m": {Input: 1, Output: 2}})
	if len(got.Turns) != 3 {
		t.Fatalf("turns %+v", got.Turns)
	}
	for i, want := range []struct {
		id             string
		prompt, out, n int64
		unpriced       int
		cost           float64
	}{{"i1", 150, 15, 2, 1, (100*1 + 10*2) / 1e6}, {"i2", 0, 0, 0, 0, 0}, {"i3", 200, 20, 1, 0, (200*1 + 20*2) / 1e6}} {
		tu := got.Turns[i]
		if tu.InvocationID != want.id || tu.Prompt != want.prompt || tu.Candidates != want.out || int64(tu.Responses) != want.n ||
			tu.Unpriced != want.unpriced || !near(tu.Cost, want.cost) || tu.Total != want.prompt+want.out {
			t.Errorf("turn %d = %+v, want %+v", i, tu, want)
		}
	}
	if got.Total.Prompt != 350 || got.Total.Candidates != 35 || got.Total.Total != 385 || got.Total.Responses != 3 ||
		got.Total.Unpriced != 1 || !near(got.Total.Cost, 360/1e6) {
		t.Errorf("total %+v", got.Total)
	}
	if empty := cost.Session(nil, nil); empty.Turns == nil || len(empty.Turns) != 0 || empty.Total != (cost.Usage{}) {
		t.Errorf("empty session %+v", empty)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func same(a, b cost.Usage) bool {
	c := a
	c.Cost = b.Cost
	return c == b && near(a.Cost, b.Cost)
}

// FuzzParse checks that no input crashes Parse, and that what it accepts
// has only finite prices of zero or more under non-empty names.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"models:\n  gpt-4o: {input: 2.5, output: 10}\n",
		`{"models": {"m": {"input": 1, "output": 2, "cached_input": 0.5}}}`,
		"models: [1, 2]", "models:\n  m: 3\n", "- a\n- b\n", "models:\n  m: {input: 1e400}\n", "\x00", "{{{{",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := cost.Parse(data)
		if err != nil {
			return
		}
		for name, pr := range p {
			for _, v := range []float64{pr.Input, pr.Output, pr.CachedInput} {
				if strings.TrimSpace(name) == "" || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("accepted %q: %+v", name, pr)
				}
			}
		}
	})
}
