package fallback_test

import (
	"context"
	"testing"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/fallback"
	"github.com/loomkit/loom/model/scripted"
)

// BenchmarkGenerate is one model call: the model alone (Off), a chain whose
// first model answers (FirstAnswers) and a chain whose first model fails
// with a 503 so the second answers (AfterFailure).
func BenchmarkGenerate(b *testing.B) {
	answer := func(context.Context, *model.Request) (scripted.Turn, error) { return scripted.Text("ok"), nil }
	failing := scripted.New("down", func(context.Context, *model.Request) (scripted.Turn, error) {
		return scripted.Turn{Err: &model.Error{Provider: "bench", StatusCode: 503, Message: "unavailable", Retryable: true}}, nil
	})
	primary := scripted.New("primary", answer)
	backup := scripted.New("backup", answer)
	first, _ := fallback.New([]model.LLM{primary, backup})
	after, _ := fallback.New([]model.LLM{failing, backup})
	req := &model.Request{}
	for _, c := range []struct {
		name string
		llm  model.LLM
	}{{"Off", primary}, {"FirstAnswers", first}, {"AfterFailure", after}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var got *model.Response
				for r, err := range c.llm.Generate(context.Background(), req, false) {
					if err != nil {
						b.Fatal(err)
					}
					got = r
				}
				if got.Text() != "ok" {
					b.Fatal("no answer")
				}
			}
		})
	}
}
