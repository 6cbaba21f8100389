package workflowagent_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// BenchmarkParallel8LLM is scenario S3 measured from this package: a
// parallel agent with 8 LLM children whose model answers with one final
// text, one invocation per iteration, each in a new in-memory session.
func BenchmarkParallel8LLM(b *testing.B) {
	llm := scripted.New("m", func(context.Context, *model.Request) (scripted.Turn, error) {
		return scripted.Text("done"), nil
	})
	children := make([]agent.Agent, 8)
	for i := range children {
		children[i] = mustLLM(b, llmagent.Config{Name: fmt.Sprintf("c%d", i), Model: llm})
	}
	par := mustParallel(b, workflowagent.Config{Name: "par", SubAgents: children})
	svc := memsession.NewService()
	r, err := runner.New(runner.Config{AppName: "bench", Agent: par, Sessions: svc, SessionCacheSize: -1})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	msg := genai.NewContentFromText("hi", genai.RoleUser)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprint("s", i)
		if _, err := svc.Create(ctx, session.Key{AppName: "bench", UserID: "u", SessionID: id}, nil); err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, err := range r.Run(ctx, "u", id, msg, nil) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 8 {
			b.Fatalf("%d events, want 8", n)
		}
	}
}
