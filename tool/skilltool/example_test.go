package skilltool_test

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/codeexec"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/skilltool"
)

// Give an agent the skills of a directory; the model loads one when a
// request needs it.
func ExampleNew() {
	dir := "testdata/skills"
	llm := scripted.NewSequence("m", scripted.Call("load_skill", map[string]any{"name": "weather-report"}), scripted.Text("Oslo: sunny, 21 °C."))

	found, err := skilltool.DiscoverDir(dir) // or skilltool.Discover(fsys), for an embed.FS
	if err != nil {
		panic(err)
	}
	skills, err := skilltool.New(skilltool.Config{
		Skills:    found,
		Executor:  &codeexec.Local{}, // scripts run only through an executor
		MaxActive: 2,                 // loading a third skill unloads the oldest
	})
	if err != nil {
		panic(err)
	}
	agent, err := llmagent.New(llmagent.Config{Name: "helper", Model: llm, Toolsets: []tool.Toolset{skills}})
	if err != nil {
		panic(err)
	}

	r, _ := runner.New(runner.Config{AppName: "app", Agent: agent, Sessions: memsession.NewService(), AutoCreateSession: true})
	evs, err := r.RunSync(context.Background(), "u", "s", genai.NewContentFromText("weather in Oslo?", genai.RoleUser), nil)
	if err != nil {
		panic(err)
	}
	for _, ev := range evs {
		for _, fr := range ev.FunctionResponses() {
			fmt.Println(fr.Name, fr.Response["skill_name"])
		}
	}
	fmt.Println(evs[len(evs)-1].Content.Parts[0].Text)
	// Output:
	// load_skill weather-report
	// Oslo: sunny, 21 °C.
}
