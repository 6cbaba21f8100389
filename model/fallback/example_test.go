package fallback_test

import (
	"context"
	"fmt"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/fallback"
	"github.com/loomkit/loom/model/scripted"
)

// A chain of two models: the first is rate limited, so the second answers,
// and its response says so.
func Example() {
	limited := scripted.New("primary", func(context.Context, *model.Request) (scripted.Turn, error) {
		return scripted.Turn{}, &model.Error{Provider: "example", StatusCode: 429, Message: "quota exceeded", Retryable: true}
	})
	backup := scripted.NewSequence("backup", scripted.Text("Hello from the backup."))
	llm, err := fallback.New([]model.LLM{limited, backup})
	if err != nil {
		panic(err)
	}
	for resp, err := range llm.Generate(context.Background(), &model.Request{}, false) {
		if err != nil {
			panic(err)
		}
		md := resp.CustomMetadata
		fmt.Println(resp.Text())
		fmt.Println(md[fallback.KeyOriginal], "->", md[fallback.KeyModel], "after", md[fallback.KeyErrorCode])
	}
	// Output:
	// Hello from the backup.
	// primary -> backup after 429
}
