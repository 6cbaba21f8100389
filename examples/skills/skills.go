// Package skills is an example Loom application: an agent with two Agent
// Skills compiled into the program (embed.FS), packing-list and
// unit-convert, which it loads when a request needs one and unloads once
// it has answered.
//
// packing-list reads a list from its references/ folder
// (load_skill_resource); unit-convert has a script, which runs only when
// the toolset has a code executor ([NewWithExecutor]), never directly.
//
// [Offline] returns a scripted model that does what the skills say:
//
//	> what should I pack for a beach trip?
//	Pack: swimsuit, sunscreen, towel, sandals.
//	> convert 10 km to miles
//	10 km is 6.21 mi.
package skills

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"strings"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/codeexec"
	"github.com/loomkit/loom/examples/internal/offline"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/skilltool"
)

//go:embed skills
var files embed.FS

// Description is the agent's description.
const Description = "An assistant with skills: packing lists and unit conversion."

const instruction = `You help travellers. Use your skills: load the one a request needs, follow it, and unload it when you are done.`

// Skills returns the application's skills, read from the files compiled
// into the program.
func Skills() ([]*skilltool.Skill, error) {
	sub, err := fs.Sub(files, "skills")
	if err != nil {
		return nil, err
	}
	return skilltool.Discover(sub)
}

// New returns the agent, with llm as its model and no code executor: the
// skills' scripts do not run.
func New(llm model.LLM) (agent.Agent, error) { return NewWithExecutor(llm, nil) }

// NewWithExecutor returns the agent, whose skills' scripts run through
// exec (codeexec.Local runs them in a confined Python process).
func NewWithExecutor(llm model.LLM, exec codeexec.Executor) (agent.Agent, error) {
	sk, err := Skills()
	if err != nil {
		return nil, err
	}
	ts, err := skilltool.New(skilltool.Config{Skills: sk, Executor: exec, MaxActive: 1})
	if err != nil {
		return nil, err
	}
	return llmagent.New(llmagent.Config{
		Name:        "traveller",
		Description: Description,
		Instruction: instruction,
		Model:       llm,
		Toolsets:    []tool.Toolset{ts},
	})
}

// Offline returns the scripted model that plays the agent without a model
// API: it loads the skill a request needs, does what the skill says and
// unloads it.
func Offline() model.LLM { return scripted.New("offline-skills", respond) }

func respond(_ context.Context, req *model.Request) (scripted.Turn, error) {
	text := strings.ToLower(offline.UserText(req))
	res := scripted.LastFunctionResponse(req)
	skill := ""
	switch {
	case offline.HasWord(text, "pack", "packing"):
		skill = "packing-list"
	case offline.HasWord(text, "convert", "km", "miles", "mi"):
		skill = "unit-convert"
	default:
		return scripted.Text("I can write packing lists and convert distances between kilometres and miles."), nil
	}
	if len(res) == 0 {
		return scripted.Call(skilltool.LoadName, map[string]any{"name": skill}), nil
	}
	switch last := res[0]; {
	case last.Name == skilltool.LoadName && skill == "packing-list":
		list := "references/city.md"
		if offline.HasWord(text, "beach", "sea", "seaside") {
			list = "references/beach.md"
		}
		return scripted.Call(skilltool.ResourceName, map[string]any{"skill_name": skill, "path": list}), nil
	case last.Name == skilltool.ResourceName || last.Name == skilltool.LoadName:
		return scripted.Call(skilltool.UnloadName, map[string]any{"name": skill}), nil
	case last.Name == skilltool.UnloadName && skill == "packing-list":
		items := strings.Split(strings.TrimSpace(resource(req)), "\n")
		return scripted.Text("Pack: " + strings.Join(items, ", ") + "."), nil
	case last.Name == skilltool.UnloadName:
		return scripted.Text(convert(text)), nil
	}
	return scripted.Text("Done."), nil
}

// resource returns the content of the last load_skill_resource response
// of the request.
func resource(req *model.Request) string {
	content := ""
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if fr := p.FunctionResponse; fr != nil && fr.Name == skilltool.ResourceName {
				content, _ = fr.Response["content"].(string)
			}
		}
	}
	return content
}

// convert answers a conversion request as the unit-convert skill says:
// from the unit named first.
func convert(text string) string {
	n := offline.Numbers(text, 1)
	if len(n) == 0 {
		return "Which distance should I convert?"
	}
	km, mi := strings.Index(text, "k"), strings.Index(text, "mi")
	if km >= 0 && (mi < 0 || km < mi) {
		return fmt.Sprintf("%g km is %.2f mi.", n[0], n[0]/1.609344)
	}
	return fmt.Sprintf("%g mi is %.2f km.", n[0], n[0]*1.609344)
}
