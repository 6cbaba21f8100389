package agentconfig_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
)

// Load reads an app's root_agent.yaml (and the files it references) and
// builds its agent tree; the caller supplies the models.
func ExampleLoad() {
	dir, _ := os.MkdirTemp("", "app")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "root_agent.yaml"), []byte(`
agent_class: SequentialAgent
name: pipeline
sub_agents:
  - name: writer
    model: gemini-2.5-flash
    instruction: Write a haiku.
  - config_path: reviewer.yaml
`), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "reviewer.yaml"), []byte(`
name: reviewer
model: gemini-2.5-flash
instruction: Review the haiku.
tools:
  - name: load_memory
`), 0o644)

	opts := &agentconfig.Options{
		Model: func(name string) (model.LLM, error) {
			return scripted.New(name, func(context.Context, *model.Request) (scripted.Turn, error) {
				return scripted.Text("ok"), nil
			}), nil
		},
	}
	app, err := agentconfig.Load(dir, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer app.Close()
	fmt.Println(app.Root.Name(), len(app.Files))

	// A mistake is reported with its file, line and field.
	_ = os.WriteFile(filepath.Join(dir, "reviewer.yaml"), []byte("name: reviewer\ninstruction: x\ntool: []\n"), 0o644)
	_, err = agentconfig.Load(dir, opts)
	fmt.Println(filepath.Base(err.(*agentconfig.Error).File), err.(*agentconfig.Error).Line, err.(*agentconfig.Error).Field)
	// Output:
	// pipeline 2
	// reviewer.yaml 3 tool
}

// CheckName is the rule for the names of agents in config files and of
// apps loaded from directories.
func ExampleCheckName() {
	for _, name := range []string{"tutor", "my-app", "a b/../c"} {
		fmt.Println(name, agentconfig.CheckName(name) == nil)
	}
	// Output:
	// tutor true
	// my-app true
	// a b/../c false
}

// An OpenAPIToolset takes its OAuth2 client from the file, in ADK's shape,
// its secret from the environment variable client_secret_env names; a
// variable that is not set is an error at its line.
func ExampleLoad_openAPIToolsetOAuth2() {
	dir, _ := os.MkdirTemp("", "app")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "calendar.yaml"), []byte(`
openapi: 3.0.3
info: {title: Calendar, version: "1"}
servers: [{url: "https://calendar.example.com"}]
paths:
  /events:
    get: {operationId: list_events, responses: {"200": {description: ok}}}
`), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "root_agent.yaml"), []byte(`
name: clerk
model: gemini-2.5-flash
instruction: Answer from the user's calendar.
tools:
  - name: OpenAPIToolset
    args:
      spec_path: calendar.yaml
      auth_scheme:
        type: oauth2
        flows:
          authorizationCode:
            authorizationUrl: https://auth.example.com/authorize
            tokenUrl: https://auth.example.com/token
            scopes: {calendar.read: read your calendar}
      auth_credential:
        auth_type: oauth2
        oauth2:
          client_id: my-client
          client_secret_env: EXAMPLE_CALENDAR_SECRET
`), 0o644)
	opts := &agentconfig.Options{Model: func(name string) (model.LLM, error) {
		return scripted.New(name, func(context.Context, *model.Request) (scripted.Turn, error) {
			return scripted.Text("ok"), nil
		}), nil
	}}

	os.Unsetenv("EXAMPLE_CALENDAR_SECRET")
	_, err := agentconfig.Load(dir, opts)
	e := err.(*agentconfig.Error)
	fmt.Println(e.Line, e.Field, e.Msg)

	os.Setenv("EXAMPLE_CALENDAR_SECRET", "from-a-secret-store")
	defer os.Unsetenv("EXAMPLE_CALENDAR_SECRET")
	app, err := agentconfig.Load(dir, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer app.Close()
	fmt.Println(app.Root.Name(), len(app.Files))
	// Output:
	// 20 tools[0].args.auth_credential.oauth2.client_secret_env names the environment variable EXAMPLE_CALENDAR_SECRET, which is not set
	// clerk 2
}
