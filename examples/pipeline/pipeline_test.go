package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/examples/pipeline"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

func newRunner(t testing.TB) *runner.Runner {
	t.Helper()
	ag, err := pipeline.New(pipeline.Offline())
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "pipeline", Agent: ag, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestOutputKeysFlowThroughState checks that each stage reads, through
// {key} templating, what the stage before it committed (A2, R-commit before
// resume), and that every stage's answer lands under its output key.
func TestOutputKeysFlowThroughState(t *testing.T) {
	r := newRunner(t)
	ctx := context.Background()
	for _, streaming := range []bool{false, true} {
		sid := fmt.Sprint("s-", streaming)
		events, err := r.RunSync(ctx, "u", sid, genai.NewContentFromText("Write about tea.", genai.RoleUser), &runner.RunOptions{Streaming: streaming})
		if err != nil {
			t.Fatal(err)
		}
		var authors []string
		for _, ev := range events {
			if !ev.Partial && !agent.IsCheckpoint(ev) {
				authors = append(authors, ev.Author)
			}
		}
		if got := strings.Join(authors, ","); got != "writer,reviewer,editor" {
			t.Errorf("streaming=%v: authors = %s, want writer,reviewer,editor", streaming, got)
		}
		sess, err := r.Sessions().Get(ctx, session.Key{AppName: "pipeline", UserID: "u", SessionID: sid}, nil)
		if err != nil {
			t.Fatal(err)
		}
		st := sess.State()
		draft, _ := st[pipeline.DraftKey].(string)
		review, _ := st[pipeline.ReviewKey].(string)
		final, _ := st[pipeline.FinalKey].(string)
		if !strings.HasPrefix(draft, "The story of tea touches") {
			t.Errorf("draft = %q", draft)
		}
		if !strings.Contains(review, "1. Open with a concrete picture.") {
			t.Errorf("review = %q", review)
		}
		if want := "Picture this: the story of tea touches"; !strings.HasPrefix(final, want) || !strings.HasSuffix(final, "What does tea mean to you?") {
			t.Errorf("final = %q, want it built from the draft", final)
		}
	}
}

// The pipeline drafts, reviews and refines; each stage's output is in state.
func Example() {
	ag, err := pipeline.New(pipeline.Offline())
	if err != nil {
		panic(err)
	}
	sessions := memsession.NewService()
	r, err := runner.New(runner.Config{AppName: "writing", Agent: ag, Sessions: sessions, AutoCreateSession: true})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := r.RunSync(ctx, "user", "s1", genai.NewContentFromText("Write about bicycles", genai.RoleUser), nil); err != nil {
		panic(err)
	}
	sess, err := sessions.Get(ctx, session.Key{AppName: "writing", UserID: "user", SessionID: "s1"}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(sess.State()[pipeline.FinalKey])
	// Output:
	// Picture this: the story of bicycles touches more of daily life than most people notice. A closer look at bicycles shows how much care goes into it. What does bicycles mean to you?
}
