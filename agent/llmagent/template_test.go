package llmagent_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
)

// TestA2InstructionTemplatingADKRules pins ADK's placeholder rules one by
// one: every run of braces around a name is one placeholder (so
// {{current_document}}, as ADK's loop sample writes it, is replaced),
// names that are not identifiers (with an optional app:, user: or temp:
// prefix) stay as written, and values are written as Python's str()
// writes them (CONFORMANCE A2).
func TestA2InstructionTemplatingADKRules(t *testing.T) {
	state := map[string]any{
		"current_document": "Draft one.",
		"criticism":        "Too short.",
		"name":             "Ada",
		"n":                3.0,
		"ratio":            0.5,
		"flag":             true,
		"doc":              map[string]any{"a": 1.0, "b": "x"},
		"items":            []any{"x", 2.0},
		"número":           "uno",
		"class":            "kw",
	}
	cases := []struct{ in, want string }{
		{"Doc: {{current_document}} / {{criticism}}", "Doc: Draft one. / Too short."},
		{"{{{name}}} {name}} {{name}", "Ada Ada Ada"},
		{"{ name } {name ?} {name? }", "Ada {name ?} Ada"},
		{"{n} {ratio} {flag}", "3 0.5 True"},
		{"{doc} {items}", "{'a': 1, 'b': 'x'} ['x', 2]"},
		{"{número} {class} {temp:scratch}", "uno kw tmp"},
		{"{missing?}|{user:missing?}|{artifact.nope?}", "||"},
		{`JSON {{"type": "llm"}} {not valid} {1abc} {} {?} {a-b}`, `JSON {{"type": "llm"}} {not valid} {1abc} {} {?} {a-b}`},
		{"{foo:bar} {user:a:b} {app:} {user:1x}", "{foo:bar} {user:a:b} {app:} {user:1x}"},
		{"{name.first} {name[0]}", "{name.first} {name[0]}"},
		{"{artifact.notes.txt} {{artifact.notes.txt}}", "be brief be brief"},
	}
	for _, c := range cases {
		arts := artifact.NewService(newMemArtifacts())
		if _, err := arts.Save(context.Background(), artifact.Ref{AppName: app, UserID: user, SessionID: sid, Name: "notes.txt"}, genai.NewPartFromText("be brief")); err != nil {
			t.Fatal(err)
		}
		m := scripted.NewSequence("m", scripted.Text("ok"))
		f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, Instruction: c.in}), arts, state)
		f.run(t, "hi", &runner.RunOptions{StateDelta: map[string]any{"temp:scratch": "tmp"}})
		got := m.Requests()[0].Config.SystemInstruction.Parts[0].Text
		got, _, _ = strings.Cut(got, "\n\nYou are an agent.")
		if got != c.want {
			t.Errorf("%s\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestA2InstructionTemplatingMissing checks the errors: a required key
// that is not set, in any number of braces, and an artifact that does not
// exist fail the run with a message naming them.
func TestA2InstructionTemplatingMissing(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"{{criticism}}", `"criticism"`},
		{"{user:tier}", `"user:tier"`},
		{"{artifact.absent.txt}", `absent.txt`},
	} {
		m := scripted.NewSequence("m", scripted.Text("ok"))
		f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, Instruction: c.in}), artifact.NewService(newMemArtifacts()), nil)
		_, err := f.r.RunSync(context.Background(), user, sid, genai.NewContentFromText("hi", genai.RoleUser), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one naming %s", c.in, err, c.want)
		}
	}
}
