package compaction_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
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

var key = session.Key{AppName: "app", UserID: "ann", SessionID: "s1"}

type harness struct {
	t        *testing.T
	r        *runner.Runner
	sessions *session.Service
}

func newHarness(t *testing.T, root agent.Agent, plugins ...*plugin.Plugin) *harness {
	t.Helper()
	sessions := memsession.NewService()
	r, err := runner.New(runner.Config{AppName: key.AppName, Agent: root, Sessions: sessions, Plugins: plugins})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sessions.Create(context.Background(), key, nil); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, r: r, sessions: sessions}
}

// send runs one invocation and returns its id.
func (h *harness) send(msg *genai.Content) string {
	h.t.Helper()
	evs, err := h.r.RunSync(context.Background(), key.UserID, key.SessionID, msg, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(evs) == 0 {
		h.t.Fatal("no events")
	}
	return evs[0].InvocationID
}

func (h *harness) turn(n int) string {
	return h.send(genai.NewContentFromText(fmt.Sprint("turn ", n), genai.RoleUser))
}

func (h *harness) events() []*event.Event {
	h.t.Helper()
	s, err := h.sessions.Get(context.Background(), key, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return s.Events()
}

func compactions(events []*event.Event) []*event.Event {
	var out []*event.Event
	for _, e := range events {
		if e.Actions.Compaction != nil {
			out = append(out, e)
		}
	}
	return out
}

// span returns the timestamps of the first and last events of an
// invocation, compaction events aside.
func span(t *testing.T, events []*event.Event, invocationID string) (first, last *event.Event) {
	t.Helper()
	for _, e := range events {
		if e.InvocationID == invocationID && e.Actions.Compaction == nil {
			if first == nil {
				first = e
			}
			last = e
		}
	}
	if first == nil {
		t.Fatalf("no events of invocation %s", invocationID)
	}
	return first, last
}

func texts(contents []*genai.Content) []string {
	var out []string
	for _, c := range contents {
		var b strings.Builder
		for _, p := range c.Parts {
			b.WriteString(p.Text)
		}
		out = append(out, c.Role+": "+b.String())
	}
	return out
}

func failOnError(t *testing.T) func(context.Context, error) {
	return func(_ context.Context, err error) { t.Errorf("compaction error: %v", err) }
}

// echoBot is an LLM agent answering "answer to <last user text>".
func echoBot(t *testing.T, usage int32) (*llmagent.Agent, *scripted.Model) {
	t.Helper()
	llm := scripted.New("bot-model", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		turn := scripted.Text("answer to " + scripted.LastUserText(req))
		if usage > 0 {
			turn.Usage = &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: usage}
		}
		return turn, nil
	}).Recording()
	bot, err := llmagent.New(llmagent.Config{Name: "bot", Model: llm})
	if err != nil {
		t.Fatal(err)
	}
	return bot, llm
}

// TestT4SlidingWindow is CONFORMANCE T4 with interval 2 and overlap 1.
func TestT4SlidingWindow(t *testing.T) {
	bot, llm := echoBot(t, 0)
	var n int
	var mu sync.Mutex
	sumModel := scripted.New("summarizer", func(context.Context, *model.Request) (scripted.Turn, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		return scripted.Text(fmt.Sprint("S", n)), nil
	}).Recording()
	h := newHarness(t, bot, compaction.Plugin(compaction.Config{
		Summarizer: compaction.LLMSummarizer(sumModel, ""), Interval: 2, Overlap: 1, OnError: failOnError(t),
	}))

	ids := []string{"", h.turn(1)}
	if got := compactions(h.events()); len(got) != 0 {
		t.Fatalf("after invocation 1: %d compactions", len(got))
	}
	ids = append(ids, h.turn(2))
	evs := h.events()
	cs := compactions(evs)
	if len(cs) != 1 {
		t.Fatalf("after invocation 2: %d compactions, want 1", len(cs))
	}
	first1, _ := span(t, evs, ids[1])
	_, last2 := span(t, evs, ids[2])
	c := cs[0].Actions.Compaction
	if !c.Start.Equal(first1.Timestamp) || !c.End.Equal(last2.Timestamp) {
		t.Errorf("first summary covers [%v, %v], want [%v, %v]", c.Start, c.End, first1.Timestamp, last2.Timestamp)
	}
	if cs[0].Author != "bot" || cs[0].InvocationID != ids[2] || c.Content.Role != genai.RoleModel || c.Content.Parts[0].Text != "S1" {
		t.Errorf("summary event: author %q invocation %q content %+v", cs[0].Author, cs[0].InvocationID, c.Content)
	}
	if evs[len(evs)-1] != cs[0] && evs[len(evs)-1].ID != cs[0].ID {
		t.Errorf("the summary is not the last event")
	}

	ids = append(ids, h.turn(3))
	if got := compactions(h.events()); len(got) != 1 {
		t.Fatalf("after invocation 3: %d compactions, want 1", len(got))
	}
	ids = append(ids, h.turn(4))
	evs = h.events()
	cs = compactions(evs)
	if len(cs) != 2 {
		t.Fatalf("after invocation 4: %d compactions, want 2", len(cs))
	}
	first2, _ := span(t, evs, ids[2])
	_, last4 := span(t, evs, ids[4])
	c = cs[1].Actions.Compaction
	if !c.Start.Equal(first2.Timestamp) || !c.End.Equal(last4.Timestamp) {
		t.Errorf("second summary covers [%v, %v], want [%v, %v] (invocations 2..4)", c.Start, c.End, first2.Timestamp, last4.Timestamp)
	}

	// What the summarizer read: invocations 1..2, then the first summary
	// with invocations 2..4.
	reqs := sumModel.Requests()
	if len(reqs) != 2 {
		t.Fatalf("summarizer called %d times", len(reqs))
	}
	in1, in2 := texts(reqs[0].Contents)[0], texts(reqs[1].Contents)[0]
	for _, want := range []string{"user: turn 1\n", "bot: answer to turn 1\n", "user: turn 2\n", "bot: answer to turn 2\n"} {
		if !strings.Contains(in1, want) {
			t.Errorf("first summarizer input lacks %q:\n%s", want, in1)
		}
	}
	for _, want := range []string{"[summary of earlier conversation] S1\n", "user: turn 2\n", "user: turn 3\n", "bot: answer to turn 4\n"} {
		if !strings.Contains(in2, want) {
			t.Errorf("second summarizer input lacks %q:\n%s", want, in2)
		}
	}
	if strings.Contains(in2, "user: turn 1\n") {
		t.Errorf("second summarizer input has invocation 1:\n%s", in2)
	}
	if !strings.HasPrefix(in1, "user: "+compaction.DefaultPrompt) {
		t.Errorf("summarizer input does not start with the default prompt")
	}

	// Invocation 5: the model sees the newest summary instead of 2..4;
	// the older summary overlaps it, so invocation 1 shows as it was.
	h.turn(5)
	modelReqs := llm.Requests()
	got := texts(modelReqs[len(modelReqs)-1].Contents)
	want := []string{"user: turn 1", "model: answer to turn 1", "model: S2", "user: turn 5"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("model request in invocation 5 = %q, want %q", got, want)
	}
	evs = h.events()
	got = texts(event.History(evs, event.HistoryOptions{Agent: "bot"}))
	want = append(want, "model: answer to turn 5")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("History = %q, want %q", got, want)
	}
	// Nothing was removed: 5 invocations of 2 events, and 2 summaries.
	if len(evs) != 12 {
		t.Errorf("session holds %d events, want 12", len(evs))
	}
}

// callAgent is a custom agent scripted by the user message: "call NAME"
// makes a function call (long-running when NAME starts with "lr") and
// pauses; "answer" makes a call and its response; any other text gets a
// text reply.
func callAgent(t *testing.T) agent.Agent {
	t.Helper()
	a, err := agent.New(agent.Config{Name: "worker", Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(yield func(*event.Event, error) bool) {
			msg := inv.UserContent()
			if rs := (&event.Event{Response: model.Response{Content: msg}}).FunctionResponses(); len(rs) > 0 {
				ev := inv.NewEvent()
				ev.Content = genai.NewContentFromText("done with "+rs[0].Name, genai.RoleModel)
				yield(ev, nil)
				return
			}
			text := msg.Parts[0].Text
			name, isCall := strings.CutPrefix(text, "call ")
			if !isCall && text != "answer" {
				ev := inv.NewEvent()
				ev.Content = genai.NewContentFromText("reply to "+text, genai.RoleModel)
				yield(ev, nil)
				return
			}
			if !isCall {
				name = "lookup"
			}
			id := "id-" + name
			call := inv.NewEvent()
			call.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: id, Name: name}}}}
			if strings.HasPrefix(name, "lr") {
				call.LongRunningToolIDs = []string{id}
			}
			if !yield(call, nil) {
				return
			}
			if isCall {
				if strings.HasPrefix(name, "lri") {
					// A long-running tool that reports an interim result.
					interim := inv.NewEvent()
					interim.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: id, Name: name, Response: map[string]any{"status": "pending"}}}}}
					yield(interim, nil)
				}
				return // paused: the client answers later
			}
			resp := inv.NewEvent()
			resp.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: id, Name: name, Response: map[string]any{"found": true}}}}}
			yield(resp, nil)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func respond(id, name string) *genai.Content {
	return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: id, Name: name, Response: map[string]any{"ok": true}}}}}
}

func covers(c *event.Event, e *event.Event) bool {
	r := c.Actions.Compaction
	return !e.Timestamp.Before(r.Start) && !e.Timestamp.After(r.End)
}

func findCall(t *testing.T, events []*event.Event, id string) *event.Event {
	t.Helper()
	for _, e := range events {
		for _, fc := range e.FunctionCalls() {
			if fc.ID == id {
				return e
			}
		}
	}
	t.Fatalf("no call %s", id)
	return nil
}

// T4: a function call still waiting for its response is never compacted;
// once answered, it is.
func TestT4PendingCallsNeverCompacted(t *testing.T) {
	for _, name := range []string{"lr-job", "plain"} {
		t.Run(name, func(t *testing.T) {
			var inputs [][]*event.Event
			sum := compaction.SummarizerFunc(func(_ context.Context, evs []*event.Event) (*genai.Content, error) {
				inputs = append(inputs, evs)
				return genai.NewContentFromText(fmt.Sprint("S", len(inputs)), genai.RoleModel), nil
			})
			h := newHarness(t, callAgent(t), compaction.Plugin(compaction.Config{Summarizer: sum, Interval: 2, OnError: failOnError(t)}))
			h.turn(1)
			h.send(genai.NewContentFromText("call "+name, genai.RoleUser))

			evs := h.events()
			cs := compactions(evs)
			if len(cs) != 1 {
				t.Fatalf("%d compactions after the call, want 1", len(cs))
			}
			call := findCall(t, evs, "id-"+name)
			if covers(cs[0], call) {
				t.Fatalf("the pending call is inside the compacted range")
			}
			for _, e := range inputs[0] {
				if len(e.FunctionCalls()) > 0 || len(e.FunctionResponses()) > 0 {
					t.Errorf("summarizer input holds a pending call or its interim response: %+v", e.Content)
				}
			}
			view := event.ModelView(evs)
			if !containsID(view, call.ID) {
				t.Errorf("the pending call left the model view")
			}

			if name == "plain" {
				// A call that does not pause waits for its tool, not for
				// the client: a client answer is refused.
				if _, err := h.r.RunSync(context.Background(), key.UserID, key.SessionID, respond("id-"+name, name), nil); !errors.Is(err, runner.ErrInvalid) {
					t.Fatalf("a client answer to a call that does not pause: %v, want ErrInvalid", err)
				}
				return
			}
			// The answer arrives and joins the paused invocation 2; with
			// invocation 3 the window is full again and covers the call.
			h.send(respond("id-"+name, name))
			h.turn(3)
			evs = h.events()
			cs = compactions(evs)
			if len(cs) != 2 {
				t.Fatalf("%d compactions after the answer, want 2", len(cs))
			}
			if !covers(cs[1], call) {
				t.Errorf("the answered call is not compacted")
			}
			// The newer window overlaps the first summary, which the model
			// no longer sees: invocation 1 shows as it was.
			got := texts(event.History(evs, event.HistoryOptions{Agent: "worker"}))
			want := []string{"user: turn 1", "model: reply to turn 1", "model: S2"}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("history = %q, want %q", got, want)
			}
			if in := inputs[1]; in[0].ID != cs[0].ID {
				t.Errorf("second summarizer input does not start with the first summary")
			}
		})
	}
}

// T4: compaction goes on past a call that stays pending (with or without
// an interim result): later turns are summarized, no range is summarized
// twice, and the pending call and its interim result stay in view (CONFORMANCE T8).
func TestT4CompactionContinuesPastPendingCall(t *testing.T) {
	for _, name := range []string{"lr-job", "lri-job"} {
		t.Run(name, func(t *testing.T) {
			sum := compaction.SummarizerFunc(func(_ context.Context, evs []*event.Event) (*genai.Content, error) {
				return genai.NewContentFromText("S", genai.RoleModel), nil
			})
			h := newHarness(t, callAgent(t), compaction.Plugin(compaction.Config{Summarizer: sum, Interval: 2, OnError: failOnError(t)}))
			h.turn(1)
			h.send(genai.NewContentFromText("call "+name, genai.RoleUser))
			for n := 3; n <= 8; n++ {
				h.turn(n)
			}
			evs := h.events()
			call := findCall(t, evs, "id-"+name)
			view := event.ModelView(evs)
			for _, e := range evs {
				if e.Author != event.AuthorUser && len(e.FunctionResponses()) > 0 && !containsID(view, e.ID) {
					t.Errorf("the interim result of the pending call left the model view")
				}
			}
			if !containsID(view, call.ID) {
				t.Errorf("the pending call left the model view")
			}
			seen := map[string]bool{}
			for _, c := range compactions(evs) {
				r := c.Actions.Compaction
				k := r.Start.String() + r.End.String()
				if seen[k] {
					t.Errorf("range %v..%v summarized twice", r.Start, r.End)
				}
				seen[k] = true
			}
			for _, e := range evs {
				if e.Author == event.AuthorUser && e.Text() == "turn 4" && containsID(view, e.ID) {
					t.Errorf("turn 4, after the pending call, was never compacted")
				}
			}
		})
	}
}

func TestAnsweredCallsAreCompacted(t *testing.T) {
	var inputs [][]*event.Event
	sum := compaction.SummarizerFunc(func(_ context.Context, evs []*event.Event) (*genai.Content, error) {
		inputs = append(inputs, evs)
		return genai.NewContentFromText("S", genai.RoleModel), nil
	})
	h := newHarness(t, callAgent(t), compaction.Plugin(compaction.Config{Summarizer: sum, Interval: 2, OnError: failOnError(t)}))
	h.turn(1)
	h.send(genai.NewContentFromText("answer", genai.RoleUser))
	evs := h.events()
	cs := compactions(evs)
	if len(cs) != 1 {
		t.Fatalf("%d compactions", len(cs))
	}
	if call := findCall(t, evs, "id-lookup"); !covers(cs[0], call) {
		t.Errorf("an answered call was left out of the range")
	}
	if got := len(inputs[0]); got != 5 {
		t.Errorf("summarizer got %d events, want 5 (two turns, call, response)", got)
	}
}

// T4, token threshold: once the prompt grows past the threshold,
// everything but the latest events is summarized, earlier summaries
// included.
func TestT4TokenThreshold(t *testing.T) {
	bot, llm := echoBot(t, 1000)
	var inputs [][]*event.Event
	sum := compaction.SummarizerFunc(func(_ context.Context, evs []*event.Event) (*genai.Content, error) {
		inputs = append(inputs, evs)
		return genai.NewContentFromText(fmt.Sprint("S", len(inputs)), genai.RoleModel), nil
	})
	h := newHarness(t, bot, compaction.Plugin(compaction.Config{Summarizer: sum, TokenThreshold: 500, RetainRecent: 2, OnError: failOnError(t)}))
	ids := []string{"", h.turn(1)}
	if got := compactions(h.events()); len(got) != 0 {
		t.Fatalf("after invocation 1: %d compactions (only the retained events exist)", len(got))
	}
	ids = append(ids, h.turn(2))
	evs := h.events()
	cs := compactions(evs)
	if len(cs) != 1 {
		t.Fatalf("after invocation 2: %d compactions, want 1", len(cs))
	}
	first1, last1 := span(t, evs, ids[1])
	if c := cs[0].Actions.Compaction; !c.Start.Equal(first1.Timestamp) || !c.End.Equal(last1.Timestamp) {
		t.Errorf("summary covers [%v, %v], want invocation 1 [%v, %v]", c.Start, c.End, first1.Timestamp, last1.Timestamp)
	}

	ids = append(ids, h.turn(3))
	evs = h.events()
	cs = compactions(evs)
	if len(cs) != 2 {
		t.Fatalf("after invocation 3: %d compactions, want 2", len(cs))
	}
	_, last2 := span(t, evs, ids[2])
	if c := cs[1].Actions.Compaction; !c.Start.Equal(first1.Timestamp) || !c.End.Equal(last2.Timestamp) {
		t.Errorf("second summary covers [%v, %v], want invocations 1..2", c.Start, c.End)
	}
	if in := inputs[1]; len(in) != 3 || in[0].ID != cs[0].ID || in[1].Text() != "turn 2" || in[2].Text() != "answer to turn 2" {
		t.Errorf("second summarizer input = %d events, first %+v", len(in), in[0])
	}
	h.turn(4)
	reqs := llm.Requests()
	got := texts(reqs[len(reqs)-1].Contents)
	want := []string{"model: S2", "user: turn 3", "model: answer to turn 3", "user: turn 4"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("model request = %q, want %q", got, want)
	}
	if n := len(h.events()); n != 4*2+3 {
		t.Errorf("session holds %d events, want 11", n)
	}
}

func TestTokenThresholdNotReached(t *testing.T) {
	bot, _ := echoBot(t, 100)
	sum := compaction.SummarizerFunc(func(context.Context, []*event.Event) (*genai.Content, error) {
		t.Error("summarizer called below the threshold")
		return nil, errors.New("unexpected")
	})
	h := newHarness(t, bot, compaction.Plugin(compaction.Config{Summarizer: sum, TokenThreshold: 500}))
	for n := 1; n <= 3; n++ {
		h.turn(n)
	}
	if got := compactions(h.events()); len(got) != 0 {
		t.Errorf("%d compactions", len(got))
	}
}

// T4: no event ever leaves the model's view unless the summary that
// replaces it was made from it (directly or through an earlier summary),
// across sliding windows, token compactions and a rewind.
func TestT4NothingLost(t *testing.T) {
	bot, _ := echoBot(t, 1000)
	covered := map[string]map[string]bool{} // summary text → event ids it was made from
	var made [][]*event.Event
	sum := compaction.SummarizerFunc(func(_ context.Context, evs []*event.Event) (*genai.Content, error) {
		made = append(made, evs)
		name := fmt.Sprint("S", len(made))
		set := map[string]bool{}
		for _, e := range evs {
			if c := e.Actions.Compaction; c != nil {
				for id := range covered[c.Content.Parts[0].Text] {
					set[id] = true
				}
				continue
			}
			set[e.ID] = true
		}
		covered[name] = set
		return genai.NewContentFromText(name, genai.RoleModel), nil
	})
	h := newHarness(t, bot, compaction.Plugin(compaction.Config{
		Summarizer: sum, Interval: 3, Overlap: 1, TokenThreshold: 10_000, RetainRecent: 3, OnError: failOnError(t),
	}))
	var ids []string
	hidden := map[string]bool{}
	madeBeforeRewind := 0
	for n := 1; n <= 12; n++ {
		ids = append(ids, h.turn(n))
		if n == 7 {
			// Rewind before invocation 6: its events and 7's leave the view.
			if _, err := h.r.Rewind(context.Background(), key.UserID, key.SessionID, ids[5]); err != nil {
				t.Fatal(err)
			}
			madeBeforeRewind = len(made)
			for _, e := range h.events() {
				if e.InvocationID == ids[5] || e.InvocationID == ids[6] {
					hidden[e.ID] = true
				}
			}
		}
		evs := h.events()
		view := event.ModelView(evs)
		shown := map[string]bool{}
		for _, v := range view {
			if s, ok := covered[v.Text()]; ok {
				for id := range s {
					shown[id] = true
				}
			}
			shown[v.ID] = true
		}
		for _, e := range evs {
			if e.Actions.Compaction != nil || e.Actions.RewindBeforeInvocationID != "" || hidden[e.ID] {
				continue
			}
			if !shown[e.ID] {
				t.Fatalf("after invocation %d: event %q (%s) is neither shown nor summarized", n, e.Text(), e.ID)
			}
		}
	}
	if len(made) < 4 {
		t.Errorf("only %d compactions in 12 invocations", len(made))
	}
	if len(made) == madeBeforeRewind {
		t.Fatal("no compaction after the rewind")
	}
	// Summaries made after the rewind never read rewound events.
	for i, in := range made[madeBeforeRewind:] {
		for _, e := range in {
			if hidden[e.ID] {
				t.Errorf("summary %d read rewound event %q", madeBeforeRewind+i+1, e.Text())
			}
		}
	}
}

func containsID(evs []*event.Event, id string) bool {
	for _, e := range evs {
		if e.ID == id {
			return true
		}
	}
	return false
}

// Without a summarizer, the root agent's model writes the summary.
func TestDefaultSummarizerUsesRootModel(t *testing.T) {
	bot, llm := echoBot(t, 0)
	h := newHarness(t, bot, compaction.Plugin(compaction.Config{Interval: 1, OnError: failOnError(t)}))
	h.turn(1)
	cs := compactions(h.events())
	if len(cs) != 1 {
		t.Fatalf("%d compactions", len(cs))
	}
	reqs := llm.Requests()
	last := texts(reqs[len(reqs)-1].Contents)
	if len(last) != 1 || !strings.Contains(last[0], compaction.DefaultPrompt) || !strings.Contains(last[0], "user: turn 1") {
		t.Errorf("summary request = %q", last)
	}
}

func TestNoSummarizerReported(t *testing.T) {
	var got []error
	h := newHarness(t, callAgent(t), compaction.Plugin(compaction.Config{Interval: 1, OnError: func(_ context.Context, err error) { got = append(got, err) }}))
	h.turn(1)
	if len(got) != 1 || !errors.Is(got[0], compaction.ErrNoSummarizer) {
		t.Errorf("errors = %v, want ErrNoSummarizer", got)
	}
	if cs := compactions(h.events()); len(cs) != 0 {
		t.Errorf("%d compactions", len(cs))
	}
}

func TestSummarizerFailureLeavesSessionAlone(t *testing.T) {
	var got []error
	sum := compaction.SummarizerFunc(func(context.Context, []*event.Event) (*genai.Content, error) {
		return nil, errors.New("boom")
	})
	h := newHarness(t, callAgent(t), compaction.Plugin(compaction.Config{Summarizer: sum, Interval: 1,
		OnError: func(_ context.Context, err error) { got = append(got, err) }}))
	h.turn(1)
	if len(got) != 1 || !strings.Contains(got[0].Error(), "boom") {
		t.Errorf("errors = %v", got)
	}
	if n := len(h.events()); n != 2 {
		t.Errorf("session holds %d events, want 2", n)
	}
}

// A cancelled invocation is not compacted.
func TestCancelledInvocationNotCompacted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, _ := agent.New(agent.Config{Name: "quitter", Run: func(_ context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(yield func(*event.Event, error) bool) {
			ev := inv.NewEvent()
			ev.Content = genai.NewContentFromText("bye", genai.RoleModel)
			yield(ev, nil)
			cancel()
		}
	}})
	sum := compaction.SummarizerFunc(func(context.Context, []*event.Event) (*genai.Content, error) {
		t.Error("summarizer called for a cancelled invocation")
		return genai.NewContentFromText("S", genai.RoleModel), nil
	})
	h := newHarness(t, a, compaction.Plugin(compaction.Config{Summarizer: sum, Interval: 1}))
	for range h.r.Run(ctx, key.UserID, key.SessionID, genai.NewContentFromText("hi", genai.RoleUser), nil) {
	}
	if cs := compactions(h.events()); len(cs) != 0 {
		t.Errorf("%d compactions", len(cs))
	}
}

func TestTranscript(t *testing.T) {
	summary := &event.Event{Author: "bot", Actions: event.Actions{Compaction: &event.Compaction{Content: genai.NewContentFromText("earlier", genai.RoleModel)}}}
	call := event.New("e-1", "bot")
	call.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
		{Text: "thinking", Thought: true},
		{FunctionCall: &genai.FunctionCall{Name: "weather", Args: map[string]any{"city": "Oslo"}}},
	}}
	resp := event.New("e-1", "bot")
	resp.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{Name: "weather", Response: map[string]any{"sky": "grey"}}}}}
	got := compaction.Transcript([]*event.Event{summary, event.NewUserText("e-1", "weather?"), call, resp, event.NewModelText("e-1", "bot", "grey")})
	want := "[summary of earlier conversation] earlier\n" +
		"user: weather?\n" +
		`bot called tool weather with {"city":"Oslo"}` + "\n" +
		`tool weather returned {"sky":"grey"}` + "\n" +
		"bot: grey\n"
	if got != want {
		t.Errorf("Transcript =\n%s\nwant\n%s", got, want)
	}
}
