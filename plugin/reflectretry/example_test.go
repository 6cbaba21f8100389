package reflectretry_test

import (
	"fmt"
	"log"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/plugin/reflectretry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
)

// The tool plugin is given to a runner like any other plugin; WrapModel
// wraps one agent's model.
func Example() {
	m := scripted.NewSequence("m", scripted.Text(`{"city":"Paris"}`))
	schema := &jsonschema.Schema{Type: "object", Required: []string{"city"}}
	sessions := memsession.NewService()

	root, err := llmagent.New(llmagent.Config{Name: "extractor", OutputSchema: schema,
		Model: reflectretry.WrapModel(m, reflectretry.ModelConfig{MaxRetries: 2})})
	if err != nil {
		log.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "app", Agent: root, Sessions: sessions,
		Plugins: []*plugin.Plugin{reflectretry.New(reflectretry.Config{MaxRetries: 2})}})
	if err != nil {
		log.Fatal(err)
	}

	fmt.Println(r != nil, root.Name())
	// Output: true extractor
}
