package compaction_test

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/plugin/compaction"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// Summarize every two invocations, re-covering one for continuity. The
// model then sees the newest summary in place of the turns it covers.
func ExamplePlugin() {
	ctx := context.Background()
	llm := scripted.New("chat", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		return scripted.Text("ok: " + scripted.LastUserText(req)), nil
	}).Recording()
	bot, _ := llmagent.New(llmagent.Config{Name: "bot", Model: llm})
	summaries := 0
	summarizer := scripted.New("summarizer", func(context.Context, *model.Request) (scripted.Turn, error) {
		summaries++
		return scripted.Text(fmt.Sprintf("summary #%d", summaries)), nil
	})
	sessions := memsession.NewService()
	r, _ := runner.New(runner.Config{
		AppName: "demo", Agent: bot, Sessions: sessions, AutoCreateSession: true,
		Plugins: []*plugin.Plugin{compaction.Plugin(compaction.Config{
			Summarizer: compaction.LLMSummarizer(summarizer, ""),
			Interval:   2,
			Overlap:    1,
		})},
	})
	for _, msg := range []string{"one", "two", "three", "four", "five"} {
		if _, err := r.RunSync(ctx, "ann", "s1", genai.NewContentFromText(msg, genai.RoleUser), nil); err != nil {
			fmt.Println(err)
			return
		}
	}

	s, _ := sessions.Get(ctx, session.Key{AppName: "demo", UserID: "ann", SessionID: "s1"}, nil)
	for _, e := range s.Events() {
		if c := e.Actions.Compaction; c != nil {
			var covered []string
			for _, u := range s.Events() {
				if u.Author == event.AuthorUser && !u.Timestamp.Before(c.Start) && !u.Timestamp.After(c.End) {
					covered = append(covered, u.Text())
				}
			}
			fmt.Printf("%s covers %s\n", c.Content.Parts[0].Text, strings.Join(covered, ", "))
		}
	}
	reqs := llm.Requests()
	fmt.Println("the model's last request:")
	for _, c := range reqs[len(reqs)-1].Contents {
		fmt.Printf("  %s: %s\n", c.Role, c.Parts[0].Text)
	}
	// Output:
	// summary #1 covers one, two
	// summary #2 covers two, three, four
	// the model's last request:
	//   user: one
	//   model: ok: one
	//   model: summary #2
	//   user: five
}
