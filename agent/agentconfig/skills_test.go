package agentconfig_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
)

// A SkillToolset entry gives the agent the skills of a directory beside
// its file; the model loads one.
func TestSkillToolset(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "root_agent.yaml", `name: skilled
model: gemini-2.5-flash
instruction: Use your skills.
tools:
  - name: SkillToolset
    args:
      skills_dir: skills
      max_active: 1
`)
	writeSkill(t, dir, "Say hello by name.")
	m := newModels(func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if fr := scripted.LastFunctionResponse(req); len(fr) > 0 {
			return scripted.Text(fmt.Sprint(fr[0].Response["instructions"])), nil
		}
		return scripted.Call("load_skill", map[string]any{"name": "greeting"}), nil
	})
	app, err := agentconfig.Load(filepath.Join(dir, "root_agent.yaml"), &agentconfig.Options{Model: m.open})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if got := texts(run(t, app.Root, "hi")); len(got) != 1 || got[0] != "skilled> Say hello by name." {
		t.Fatalf("texts = %q, want the skill's instructions", got)
	}
	var sys strings.Builder
	for _, p := range m.byName["gemini-2.5-flash"].Requests()[0].Config.SystemInstruction.Parts {
		sys.WriteString(p.Text)
	}
	if !strings.Contains(sys.String(), "<name>\ngreeting\n</name>") {
		t.Errorf("system instruction %q does not list the skill", sys.String())
	}
}

// Bad SkillToolset args are errors naming the field.
func TestSkillToolsetErrors(t *testing.T) {
	for args, want := range map[string]string{
		"skills_dir: ../elsewhere":                        "outside the app's directory",
		"skills_dir: /etc":                                "relative",
		"skills_dir: missing":                             "missing",
		"skills_dir: skills\n      x: 1":                  "x",
		"max_active: 2":                                   "skills_dir",
		"skills_dir: skills\n      code_executor: remote": "code_executor",
	} {
		dir := t.TempDir()
		write(t, dir, "root_agent.yaml", "name: skilled\nmodel: m\ninstruction: x\ntools:\n  - name: SkillToolset\n    args:\n      "+args+"\n")
		writeSkill(t, dir, "Say hello.")
		_, err := agentconfig.Load(filepath.Join(dir, "root_agent.yaml"), &agentconfig.Options{Model: newModels(nil).open})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "root_agent.yaml") {
			t.Errorf("args %q: %v, want an error about %q", args, err, want)
		}
	}
}

// writeSkill writes the skill greeting, with the instructions text, in
// dir/skills.
func writeSkill(t *testing.T, dir, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "skills", "greeting"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "skills/greeting/SKILL.md", "---\nname: greeting\ndescription: Greets people.\n---\n"+text+"\n")
}
