// Command loom serves and runs Loom agents: the HTTP API and dev web UI
// (loom web), the API alone (loom api), a terminal chat (loom run APP), and
// new applications (loom create NAME).
//
// It serves the example applications (assistant, multiagent, pipeline,
// loop, workflow), which work offline with scripted models, or with a real
// model when an API key is set or --model names one; "loom web DIR" adds
// the applications of DIR written as agent config files (root_agent.yaml),
// reloaded as they are edited.
// To serve your own agents with the same commands, call cli.Main from your
// own main package.
package main

import (
	"os"

	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/examples/assistant"
	"github.com/loomkit/loom/examples/loop"
	"github.com/loomkit/loom/examples/multiagent"
	"github.com/loomkit/loom/examples/pipeline"
	workflowexample "github.com/loomkit/loom/examples/workflow"
)

// exampleApps are the applications the loom binary serves.
var exampleApps = []cli.App{
	{Name: "assistant", New: assistant.New, Offline: assistant.Offline},
	{Name: "multiagent", New: multiagent.New, Offline: multiagent.Offline},
	{Name: "pipeline", New: pipeline.New, Offline: pipeline.Offline},
	{Name: "loop", New: loop.New, Offline: loop.Offline},
	{Name: "workflow", New: workflowexample.New, Offline: workflowexample.Offline},
}

func main() {
	os.Exit(cli.Main(exampleApps...))
}
