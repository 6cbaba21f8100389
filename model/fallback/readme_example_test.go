package fallback_test

import (
	"context"
	"fmt"
	"log"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/fallback"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
)

// An agent whose model falls back to a second one: the first is
// overloaded, so the answer comes from the backup, and the event says so.
func Example_agent() {
	primary := scripted.New("primary", func(context.Context, *model.Request) (scripted.Turn, error) {
		return scripted.Turn{Err: &model.Error{Provider: "example", StatusCode: 529, Message: "overloaded", Retryable: true}}, nil
	})
	backup := scripted.NewSequence("backup", scripted.Text("Hello."))

	llm, err := fallback.New([]model.LLM{primary, backup})
	if err != nil {
		log.Fatal(err)
	}
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: llm})
	if err != nil {
		log.Fatal(err)
	}

	r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		log.Fatal(err)
	}
	evs, err := r.RunSync(context.Background(), "u", "s", genai.NewContentFromText("hi", genai.RoleUser), nil)
	if err != nil {
		log.Fatal(err)
	}
	last := evs[len(evs)-1]
	fmt.Println(last.Text(), last.CustomMetadata["fallback_model"], last.CustomMetadata["error_code"])
	// Output: Hello. backup 529
}
