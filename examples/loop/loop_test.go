package loop_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/examples/loop"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

func newRunner(t testing.TB) *runner.Runner {
	t.Helper()
	ag, err := loop.New(loop.Offline())
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "loop", Agent: ag, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func trail(events []*event.Event) string {
	var out []string
	for _, ev := range events {
		if ev.Partial || agent.IsCheckpoint(ev) {
			continue
		}
		switch {
		case len(ev.FunctionCalls()) > 0:
			out = append(out, ev.Author+":call "+ev.FunctionCalls()[0].Name)
		case len(ev.FunctionResponses()) > 0:
			r := ev.Author + ":response"
			if ev.Actions.Escalate {
				r += "(escalate)"
			}
			out = append(out, r)
		default:
			out = append(out, ev.Author)
		}
	}
	return strings.Join(out, " ")
}

// TestCriticEndsLoop checks that the critic's exit_loop call escalates and
// stops the loop after the third pass, well before MaxIterations, and that
// every pass of the writer built on the draft the previous pass committed.
func TestCriticEndsLoop(t *testing.T) {
	r := newRunner(t)
	ctx := context.Background()
	for i, topic := range []string{"gardening", "Chess"} {
		for _, streaming := range []bool{false, true} {
			sid := fmt.Sprint("s-", streaming)
			events, err := r.RunSync(ctx, "u", sid, genai.NewContentFromText(topic, genai.RoleUser), &runner.RunOptions{Streaming: streaming})
			if err != nil {
				t.Fatal(err)
			}
			want := "writer critic writer critic writer critic:call exit_loop critic:response(escalate)"
			if got := trail(events); got != want {
				t.Errorf("turn %d (streaming=%v):\n got %s\nwant %s", i, streaming, got, want)
			}
			sess, err := r.Sessions().Get(ctx, session.Key{AppName: "loop", UserID: "u", SessionID: sid}, nil)
			if err != nil {
				t.Fatal(err)
			}
			draft, _ := sess.State()[loop.DraftKey].(string)
			if loop.Sentences(draft) != 3 || !strings.HasPrefix(draft, "Every story about "+topic+" begins") {
				t.Errorf("draft = %q, want three sentences on %s", draft, topic)
			}
		}
	}
}

// The writer extends the draft until the critic ends the loop.
func Example() {
	ag, err := loop.New(loop.Offline())
	if err != nil {
		panic(err)
	}
	sessions := memsession.NewService()
	r, err := runner.New(runner.Config{AppName: "loop", Agent: ag, Sessions: sessions, AutoCreateSession: true})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	events, err := r.RunSync(ctx, "user", "s1", genai.NewContentFromText("kites", genai.RoleUser), nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(trail(events))
	sess, err := sessions.Get(ctx, session.Key{AppName: "loop", UserID: "user", SessionID: "s1"}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(sess.State()[loop.DraftKey])
	// Output:
	// writer critic writer critic writer critic:call exit_loop critic:response(escalate)
	// Every story about kites begins with a single, simple idea. Each revision makes that idea a little clearer and a little bolder. In the end, the idea stands on its own, and the work behind it disappears.
}
