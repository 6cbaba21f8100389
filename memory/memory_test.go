package memory_test

import (
	"errors"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/memory/memmemory"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

func TestEntryText(t *testing.T) {
	e := memory.Entry{Content: &genai.Content{Parts: []*genai.Part{
		{Text: "one"}, nil, {Text: "hidden", Thought: true}, {InlineData: &genai.Blob{}}, {Text: "two"},
	}}}
	if got := e.Text(); got != "one two" {
		t.Errorf("Text = %q, want %q", got, "one two")
	}
	if got := (&memory.Entry{}).Text(); got != "" {
		t.Errorf("Text of an empty entry = %q", got)
	}
}

// TestAddSessionKeepsOnlyFinalText checks which parts of a session become
// memories: partial events and thoughts do not.
func TestAddSessionKeepsOnlyFinalText(t *testing.T) {
	ctx := t.Context()
	sessions := memsession.NewService()
	mem := memory.NewService(memmemory.New())
	sess, err := sessions.Create(ctx, session.Key{AppName: "a", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mixed := event.NewModelText("i", "agent", "kept answer")
	mixed.Content.Parts = append(mixed.Content.Parts, &genai.Part{Text: "secret reasoning", Thought: true})
	for _, ev := range []*event.Event{event.NewUserText("i", "question"), mixed} {
		if err := sessions.AppendEvent(ctx, sess, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := mem.AddSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if res, _ := mem.Search(ctx, "a", "u", "reasoning", nil); len(res) != 0 {
		t.Errorf("thought text was remembered: %q", res[0].Text())
	}
	res, err := mem.Search(ctx, "a", "u", "kept", nil)
	if err != nil || len(res) != 1 || res[0].Text() != "kept answer" || len(res[0].Content.Parts) != 1 {
		t.Errorf("Search(kept) = %+v, %v; want the answer without its thought", res, err)
	}
}

func TestServiceRejectsBadRequests(t *testing.T) {
	mem := memory.NewService(memmemory.New())
	if err := mem.AddSession(t.Context(), nil); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("AddSession(nil) = %v, want ErrInvalid", err)
	}
	for _, k := range [][2]string{{"", "u"}, {"a", ""}, {" ", "u"}} {
		if _, err := mem.Search(t.Context(), k[0], k[1], "x", nil); !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("Search(%q, %q) = %v, want ErrInvalid", k[0], k[1], err)
		}
	}
	if err := mem.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
