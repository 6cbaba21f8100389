package event_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
)

// at returns the i-th instant of a test timeline.
func at(i int) time.Time { return ts0.Add(time.Duration(i) * time.Second) }

func textAt(id, inv, author string, i int) *event.Event {
	role := genai.RoleModel
	if author == event.AuthorUser {
		role = genai.RoleUser
	}
	return &event.Event{ID: id, InvocationID: inv, Author: author, Timestamp: at(i),
		Response: r(genai.NewContentFromText(id, genai.Role(role)))}
}

func compactionAt(id string, i, start, end int) *event.Event {
	return &event.Event{ID: id, InvocationID: "e-c", Author: "user", Timestamp: at(i),
		Actions: event.Actions{Compaction: &event.Compaction{Start: at(start), End: at(end),
			Content: genai.NewContentFromText("summary "+id, genai.RoleModel)}}}
}

// viewIDs returns the ids in a model view; summaries show as "S:<id>".
func viewIDs(evs []*event.Event) string {
	var ids []string
	for _, e := range evs {
		if e.Content != nil && len(e.Content.Parts) == 1 && strings.HasPrefix(e.Content.Parts[0].Text, "summary ") {
			ids = append(ids, "S:"+e.ID)
		} else {
			ids = append(ids, e.ID)
		}
	}
	return strings.Join(ids, " ")
}

// TestModelViewCompaction: a summary replaces the events in its range at the
// place of the first of them; with overlapping ranges the newest wins and
// no event disappears without a summary covering it (T4).
func TestModelViewCompaction(t *testing.T) {
	e := func(i int) *event.Event { return textAt(fmt.Sprintf("e%d", i), fmt.Sprintf("inv%d", i), "agent", i) }
	for _, tc := range []struct {
		name string
		log  []*event.Event
		want string
	}{
		{"none", []*event.Event{e(1), e(2)}, "e1 e2"},
		{"middle", []*event.Event{e(1), e(2), e(3), e(4), compactionAt("c", 5, 2, 3)}, "e1 S:c e4"},
		{"prefix then more", []*event.Event{e(1), e(2), compactionAt("c", 3, 1, 2), e(4)}, "S:c e4"},
		{"two disjoint", []*event.Event{e(1), e(2), compactionAt("c1", 3, 1, 2), e(4), e(5), compactionAt("c2", 6, 4, 5), e(7)},
			"S:c1 S:c2 e7"},
		{"overlap, newest wins", []*event.Event{e(1), e(2), e(3), compactionAt("c1", 4, 1, 3), e(5), compactionAt("c2", 6, 2, 5)},
			"e1 S:c2"},
		{"newest inside older", []*event.Event{e(1), e(2), e(3), e(4), compactionAt("c1", 5, 1, 4), compactionAt("c2", 6, 3, 4)},
			"e1 e2 S:c2"},
		{"newest covers older", []*event.Event{e(1), e(2), e(3), compactionAt("c1", 4, 2, 3), e(5), compactionAt("c2", 6, 1, 5)},
			"S:c2"},
		{"interval 2 overlap 1", []*event.Event{e(1), e(2), compactionAt("c1", 3, 1, 2), e(4), e(5), compactionAt("c2", 6, 2, 5), e(7)},
			"e1 S:c2 e7"},
		// A newer compaction of an earlier range does not overlap the
		// older one, so both summaries stand.
		{"newer covers earlier range", []*event.Event{e(1), e(2), e(3), e(4), compactionAt("c1", 5, 3, 4), compactionAt("c2", 6, 1, 2)},
			"S:c2 S:c1"},
		{"three, middle overlaps newest", []*event.Event{e(1), e(2), e(3), e(4), e(5), compactionAt("c1", 6, 1, 1),
			compactionAt("c2", 7, 2, 4), compactionAt("c3", 8, 4, 5)}, "S:c1 e2 e3 S:c3"},
		{"out of order, disjoint", []*event.Event{e(1), e(2), e(3), e(4), e(5), e(6), compactionAt("c1", 7, 5, 6),
			compactionAt("c2", 8, 1, 2), compactionAt("c3", 9, 3, 4), e(10)}, "S:c2 S:c3 S:c1 e10"},
		{"out of order, oldest overlaps", []*event.Event{e(1), e(2), e(3), e(4), e(5), compactionAt("c1", 6, 2, 5),
			compactionAt("c2", 7, 1, 1), compactionAt("c3", 8, 4, 5)}, "S:c2 e2 e3 S:c3"},
		{"range past the end", []*event.Event{e(1), e(2), compactionAt("c", 3, 2, 9)}, "e1 S:c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := json.Marshal(tc.log)
			view := event.ModelView(tc.log)
			if got := viewIDs(view); got != tc.want {
				t.Errorf("view = %q, want %q", got, tc.want)
			}
			for _, v := range view {
				if v.Actions.Compaction != nil {
					t.Errorf("compaction event %s shown raw", v.ID)
				}
			}
			if after, _ := json.Marshal(tc.log); string(after) != string(before) {
				t.Error("ModelView modified the log")
			}
		})
	}

	// The summary event carries the compaction's content, author and end.
	c := compactionAt("c", 5, 2, 3)
	view := event.ModelView([]*event.Event{e(1), e(2), e(3), e(4), c})
	s := view[1]
	if s.Content != c.Actions.Compaction.Content || s.Author != c.Author || !s.Timestamp.Equal(at(3)) {
		t.Errorf("summary = %+v", s)
	}
}

// TestModelViewRewind: a rewind hides the rewound invocations and itself;
// later events show (T5).
func TestModelViewRewind(t *testing.T) {
	log := []*event.Event{
		textAt("a1", "inv1", "user", 1), textAt("a2", "inv1", "agent", 2),
		textAt("b1", "inv2", "user", 3), textAt("b2", "inv2", "agent", 4),
		textAt("c1", "inv3", "user", 5),
		{ID: "rw", InvocationID: "inv4", Author: "user", Timestamp: at(6),
			Actions: event.Actions{RewindBeforeInvocationID: "inv2"}},
		textAt("d1", "inv5", "user", 7),
	}
	if got := viewIDs(event.ModelView(log)); got != "a1 a2 d1" {
		t.Errorf("view = %q, want %q", got, "a1 a2 d1")
	}
	// Rewinding to the first invocation hides everything before.
	log[5] = &event.Event{ID: "rw", InvocationID: "inv4", Timestamp: at(6), Actions: event.Actions{RewindBeforeInvocationID: "inv1"}}
	if got := viewIDs(event.ModelView(log)); got != "d1" {
		t.Errorf("view = %q, want %q", got, "d1")
	}
	// Nothing is hidden without a rewind.
	if got := viewIDs(event.ModelView(log[:5])); got != "a1 a2 b1 b2 c1" {
		t.Errorf("view = %q", got)
	}
}

func texts(c *genai.Content) []string {
	var out []string
	for _, p := range c.Parts {
		out = append(out, p.Text)
	}
	return out
}

// TestHistoryOtherAgents: other agents' events become user-role context
// (A7), their calls and results written as Python writes them
// (CONFORMANCE A7).
func TestHistoryOtherAgents(t *testing.T) {
	b := &event.Event{ID: "1", Author: "B", Timestamp: at(1), Response: r(&genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
		{Text: "secret plan", Thought: true},
		{Text: "hello"},
		{FunctionCall: &genai.FunctionCall{Name: "lookup", Args: map[string]any{"q": "x"}}},
	}})}
	bResp := &event.Event{ID: "2", Author: "B", Timestamp: at(2), Response: r(&genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
		{FunctionResponse: &genai.FunctionResponse{Name: "lookup", Response: map[string]any{"result": 1}}},
	}})}
	own := textAt("3", "inv", "A", 3)
	user := textAt("4", "inv", "user", 4)

	h := event.History([]*event.Event{b, bResp, own, user}, event.HistoryOptions{Agent: "A"})
	if len(h) != 4 {
		t.Fatalf("history has %d contents, want 4", len(h))
	}
	if h[0].Role != genai.RoleUser {
		t.Errorf("other agent's content role = %q, want user", h[0].Role)
	}
	want := []string{"For context:", "[B] said: hello", "[B] called tool `lookup` with parameters: {'q': 'x'}"}
	if got := texts(h[0]); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("context parts = %q, want %q", got, want)
	}
	if got := texts(h[1]); len(got) != 2 || got[1] != "[B] `lookup` tool returned result: {'result': 1}" {
		t.Errorf("tool result context = %q", got)
	}
	if h[2].Role != genai.RoleModel || texts(h[2])[0] != "3" {
		t.Errorf("own event = %+v", h[2])
	}
	if h[3].Role != genai.RoleUser || texts(h[3])[0] != "4" {
		t.Errorf("user event = %+v", h[3])
	}
	// An event with only thoughts contributes nothing for another agent.
	onlyThought := &event.Event{Author: "B", Response: r(&genai.Content{Parts: []*genai.Part{{Text: "hm", Thought: true}}})}
	if c := onlyThought.ContentFor("A", ""); c != nil {
		t.Errorf("thought-only event from another agent = %+v, want nil", c)
	}
	// With no agent named, every event keeps its role.
	if h := event.History([]*event.Event{b}, event.HistoryOptions{}); len(h) != 1 || h[0].Role != genai.RoleModel {
		t.Errorf("history without agent = %+v", h)
	}
}

// TestHistoryBranches: an agent sees events of its own branch and its
// ancestors', not its siblings' (A4).
func TestHistoryBranches(t *testing.T) {
	mk := func(id, branch string) *event.Event {
		e := textAt(id, "inv", "user", len(id))
		e.Branch = branch
		return e
	}
	log := []*event.Event{mk("none", ""), mk("root", "root"), mk("a", "root.a"), mk("b", "root.b"),
		mk("ab", "root.ab"), mk("a.x", "root.a.x")}
	var got []string
	for _, c := range event.History(log, event.HistoryOptions{Agent: "a", Branch: "root.a"}) {
		got = append(got, c.Parts[0].Text)
	}
	if strings.Join(got, " ") != "none root a" {
		t.Errorf("root.a sees %q, want %q", got, "none root a")
	}
	for _, tc := range []struct {
		branch, eventBranch string
		want                bool
	}{
		{"root.a", "root", true}, {"root.a", "root.a", true}, {"root.a", "root.b", false},
		{"root.a", "root.ab", false}, {"root.a", "root.a.x", false}, {"", "root.b", true}, {"root.a", "", true},
	} {
		if got := event.InBranch(tc.branch, tc.eventBranch); got != tc.want {
			t.Errorf("InBranch(%q, %q) = %v, want %v", tc.branch, tc.eventBranch, got, tc.want)
		}
	}
}

// TestHistoryRuntimeCalls: generated call ids are stripped, confirmation and
// credential calls are left out, and the log is not modified.
func TestHistoryRuntimeCalls(t *testing.T) {
	call := &event.Event{ID: "1", Author: "A", Timestamp: at(1), Response: r(&genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
		{FunctionCall: &genai.FunctionCall{ID: "adk-123", Name: "add"}},
		{FunctionCall: &genai.FunctionCall{ID: "model-id", Name: "sub"}},
		{FunctionCall: &genai.FunctionCall{ID: "adk-c", Name: event.FunctionRequestConfirmation}},
	}})}
	resp := &event.Event{ID: "2", Author: "A", Timestamp: at(2), Response: r(&genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
		{FunctionResponse: &genai.FunctionResponse{ID: "adk-123", Name: "add"}},
	}})}
	confirm := &event.Event{ID: "3", Author: "user", Timestamp: at(3), Response: r(&genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
		{FunctionResponse: &genai.FunctionResponse{ID: "adk-c", Name: event.FunctionRequestConfirmation}},
	}})}
	cred := &event.Event{ID: "4", Author: "A", Timestamp: at(4), Response: r(&genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
		{FunctionCall: &genai.FunctionCall{ID: "adk-k", Name: event.FunctionRequestCredential}},
	}})}
	partial := textAt("5", "inv", "A", 5)
	partial.Partial = true
	empty := &event.Event{ID: "6", Author: "A", Timestamp: at(6), Response: r(&genai.Content{Parts: []*genai.Part{{}}})}

	log := []*event.Event{call, resp, confirm, cred, partial, empty}
	before, _ := json.Marshal(log)
	h := event.History(log, event.HistoryOptions{Agent: "A"})
	if len(h) != 2 {
		t.Fatalf("history has %d contents, want 2: %+v", len(h), h)
	}
	if n := len(h[0].Parts); n != 2 {
		t.Fatalf("call content has %d parts, want 2", n)
	}
	if fc := h[0].Parts[0].FunctionCall; fc.ID != "" || fc.Name != "add" {
		t.Errorf("generated id kept: %+v", fc)
	}
	if fc := h[0].Parts[1].FunctionCall; fc.ID != "model-id" {
		t.Errorf("model's id removed: %+v", fc)
	}
	if fr := h[1].Parts[0].FunctionResponse; fr.ID != "" || fr.Name != "add" {
		t.Errorf("generated response id kept: %+v", fr)
	}
	if after, _ := json.Marshal(log); string(after) != string(before) {
		t.Error("History modified the log")
	}
}

// TestHistoryWithCompaction: the model sees the summary in place of the
// compacted events.
func TestHistoryWithCompaction(t *testing.T) {
	log := []*event.Event{
		textAt("q1", "inv1", "user", 1), textAt("a1", "inv1", "A", 2),
		compactionAt("c", 3, 1, 2),
		textAt("q2", "inv2", "user", 4),
	}
	h := event.History(log, event.HistoryOptions{Agent: "A"})
	var got []string
	for _, c := range h {
		got = append(got, c.Role+":"+c.Parts[0].Text)
	}
	// The summary keeps the role of the compacted content.
	if want := "model:summary c|user:q2"; strings.Join(got, "|") != want {
		t.Errorf("history = %q, want %q", strings.Join(got, "|"), want)
	}
}

// TestModelViewCoversOnlyEarlierEvents checks that an event logged after a
// compaction is shown even when its timestamp falls inside the compacted
// range (same microsecond as the range's end): the summary cannot contain it.
func TestModelViewCoversOnlyEarlierEvents(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	a := event.NewModelText("e-1", "bot", "old")
	a.Timestamp = t0
	sum := event.NewModelText("e-1", "bot", "")
	sum.Timestamp = t0.Add(time.Second)
	sum.Actions.Compaction = &event.Compaction{Start: t0, End: t0.Add(time.Second), Content: genai.NewContentFromText("summary", genai.RoleModel)}
	late := event.NewModelText("e-2", "bot", "late")
	late.Timestamp = t0.Add(time.Second) // same instant as the range's end
	view := event.ModelView([]*event.Event{a, sum, late})
	if len(view) != 2 || view[0].Text() != "summary" || view[1].Text() != "late" {
		var got []string
		for _, e := range view {
			got = append(got, e.Text())
		}
		t.Fatalf("view = %q, want [summary late]", got)
	}
}

// TestHistoryLatestResponseWins: a call answered twice (an interim result,
// then the final one) shows one response, the latest, where the first was (CONFORMANCE T7).
func TestHistoryLatestResponseWins(t *testing.T) {
	call := event.New("e-1", "a")
	call.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: "c1", Name: "job"}}}}
	interim := event.New("e-1", "a")
	interim.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "job", Response: map[string]any{"status": "pending"}}}}}
	final := event.New("e-1", event.AuthorUser)
	final.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "job", Response: map[string]any{"status": "done"}}}}}
	b := event.NewHistoryBuilder(event.HistoryOptions{Agent: "a"})
	b.Add(call)
	b.Add(interim)
	before := b.Contents()
	b.Add(final)
	got := b.Contents()
	if len(got) != 2 || got[1].Parts[0].FunctionResponse.Response["status"] != "done" {
		t.Fatalf("history %v, want the call then the final response", got)
	}
	if before[1].Parts[0].FunctionResponse.Response["status"] != "pending" {
		t.Fatal("a history handed out earlier changed")
	}
	if h := event.History([]*event.Event{call, interim, final}, event.HistoryOptions{Agent: "a"}); len(h) != 2 {
		t.Fatalf("History gives %d contents, want 2", len(h))
	}
}

// TestHistoryEndsWithLatestResponse: while the latest event is a later
// response to an earlier call, the history ends with the call and that
// response, as ADK's does; once another event follows, what came between
// is back (CONFORMANCE T7).
func TestHistoryEndsWithLatestResponse(t *testing.T) {
	call := event.New("e-1", "a")
	call.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: "c1", Name: "job"}}}}
	interim := event.New("e-1", "a")
	interim.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "job", Response: map[string]any{"status": "pending"}}}}}
	said := event.New("e-1", "a")
	said.Content = genai.NewContentFromText("submitted", genai.RoleModel)
	final := event.New("e-2", event.AuthorUser)
	final.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "job", Response: map[string]any{"status": "done"}}}}}
	done := event.New("e-2", "a")
	done.Content = genai.NewContentFromText("done", genai.RoleModel)

	got := event.History([]*event.Event{call, interim, said, final}, event.HistoryOptions{Agent: "a"})
	if len(got) != 2 || got[1].Parts[0].FunctionResponse.Response["status"] != "done" {
		t.Fatalf("history %v, want the call then the final response", got)
	}
	got = event.History([]*event.Event{call, interim, said, final, done}, event.HistoryOptions{Agent: "a"})
	if len(got) != 4 || got[1].Parts[0].FunctionResponse.Response["status"] != "done" || got[2].Parts[0].Text != "submitted" || got[3].Parts[0].Text != "done" {
		t.Fatalf("history %v, want the call, the final response and both answers", got)
	}
}
