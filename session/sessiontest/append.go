package sessiontest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/session"
)

// snapshot captures what a caller can see of a session copy.
type snapshot struct {
	state   string
	ids     []string
	updated time.Time
}

func snap(s *session.Session) snapshot {
	return snapshot{canon(s.State()), eventIDs(s.Events()), s.LastUpdateTime()}
}

func wantUnchanged(t *testing.T, what string, s *session.Session, before snapshot) {
	t.Helper()
	after := snap(s)
	if after.state != before.state || canon(after.ids) != canon(before.ids) || !after.updated.Equal(before.updated) {
		t.Errorf("%s: session changed from %+v to %+v", what, before, after)
	}
}

// testS5Partial: partial events are neither stored nor applied (S5).
func testS5Partial(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", map[string]any{"k": 0})
	before := snap(s)
	p := textEvent("", "chunk", map[string]any{"k": 1, "app:a": 1, "user:u": 1})
	p.Partial = true
	h.appendEv(t, s, p)
	wantUnchanged(t, "live session after partial", s, before)
	if p.ID != "" {
		t.Errorf("partial event was given id %q", p.ID)
	}
	fresh := h.get(t, s.Key())
	wantUnchanged(t, "fresh read after partial", fresh, before)

	// The partial event did not advance the session: the same copy appends.
	h.appendEv(t, s, textEvent("ev-1", "done", map[string]any{"k": 2}))
	got := h.get(t, s.Key())
	wantIDs(t, "after final event", got.Events(), "ev-1")
	wantState(t, "after final event", got.State(), map[string]any{"k": 2})
}

// testS7Stale: an append through an outdated copy fails with ErrStale and
// changes nothing anywhere (S7).
func testS7Stale(t *testing.T, h *harness) {
	h.create(t, "u1", "s1", map[string]any{"k": 0})
	a := h.get(t, h.key("u1", "s1"))
	b := h.get(t, h.key("u1", "s1"))
	h.appendEv(t, b, textEvent("ev-b", "from b", map[string]any{"k": "b"}))

	before := snap(a)
	ev := textEvent("", "from a", map[string]any{"k": "a", "app:x": 1, "user:y": 1, "temp:z": 1})
	err := h.svc.AppendEvent(t.Context(), a, ev)
	if !errors.Is(err, session.ErrStale) {
		t.Fatalf("append through stale copy = %v, want ErrStale", err)
	}
	wantUnchanged(t, "stale copy", a, before)
	if ev.ID != "" || !ev.Timestamp.IsZero() || len(ev.Actions.StateDelta) != 4 {
		t.Errorf("failed append changed the event: id %q, ts %v, delta %s", ev.ID, ev.Timestamp, canon(ev.Actions.StateDelta))
	}
	stored := h.get(t, a.Key())
	wantIDs(t, "storage after stale append", stored.Events(), "ev-b")
	wantState(t, "storage after stale append", stored.State(), map[string]any{"k": "b"})

	// Refresh makes the copy current; the retried append succeeds.
	if err := h.svc.Refresh(t.Context(), a); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	h.appendEv(t, a, ev)
	stored = h.get(t, a.Key())
	wantIDs(t, "after retry", stored.Events(), "ev-b", ev.ID)
	wantState(t, "after retry", stored.State(), map[string]any{"k": "a", "app:x": 1, "user:y": 1})
	// b is now the stale one.
	if err := h.svc.AppendEvent(t.Context(), b, textEvent("", "b again", nil)); !errors.Is(err, session.ErrStale) {
		t.Errorf("append through b after a's = %v, want ErrStale", err)
	}
}

// testS10Cancelled: an append with a cancelled context fails and changes
// nothing; so does a direct store call (S10).
func testS10Cancelled(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", map[string]any{"k": 0})
	h.appendEv(t, s, textEvent("ev-1", "x", map[string]any{"k": 1}))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	before := snap(s)
	ev := textEvent("ev-2", "y", map[string]any{"k": 2, "app:a": 1})
	if err := h.svc.AppendEvent(ctx, s, ev); !errors.Is(err, context.Canceled) {
		t.Errorf("append with cancelled context = %v, want context.Canceled", err)
	}
	wantUnchanged(t, "live session", s, before)

	// The store itself must refuse too: a context may be cancelled after the
	// service checked it.
	if err := h.store.AppendEvent(ctx, s.Key(), s.CreateTime(), 1, ev, session.Delta{Session: map[string]any{"k": 2}}); err == nil {
		t.Error("Store.AppendEvent with cancelled context succeeded")
	}
	got := h.get(t, s.Key())
	wantIDs(t, "storage", got.Events(), "ev-1")
	wantState(t, "storage", got.State(), map[string]any{"k": 1})

	// And the copy still works once the context is live.
	h.appendEv(t, s, ev)
	wantIDs(t, "after retry", h.get(t, s.Key()).Events(), "ev-1", "ev-2")
}

// testS10Closed: an append to a closed store fails and leaves the in-memory
// session unchanged (S10).
func testS10Closed(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", map[string]any{"k": 0})
	h.appendEv(t, s, textEvent("ev-1", "x", map[string]any{"k": 1}))
	before := snap(s)
	if err := h.svc.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ev := textEvent("ev-2", "y", map[string]any{"k": 2, "temp:t": 1})
	if err := h.svc.AppendEvent(t.Context(), s, ev); err == nil {
		t.Fatal("append to a closed store succeeded")
	}
	wantUnchanged(t, "live session", s, before)
	if _, ok := ev.Actions.StateDelta["temp:t"]; !ok {
		t.Error("failed append modified the event's delta")
	}
	if _, err := h.svc.Get(t.Context(), s.Key(), nil); err == nil {
		t.Error("Get from a closed store succeeded")
	}
}

// testS10Deleted: an append to a session deleted meanwhile fails with
// ErrNotFound and leaves the copy unchanged (S10).
func testS10Deleted(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", nil)
	h.appendEv(t, s, textEvent("ev-1", "x", map[string]any{"k": 1}))
	if err := h.svc.Delete(t.Context(), s.Key()); err != nil {
		t.Fatal(err)
	}
	before := snap(s)
	err := h.svc.AppendEvent(t.Context(), s, textEvent("ev-2", "y", map[string]any{"k": 2, "user:u": 1}))
	if !errors.Is(err, session.ErrNotFound) && !errors.Is(err, session.ErrStale) {
		t.Errorf("append to deleted session = %v, want ErrNotFound or ErrStale", err)
	}
	wantUnchanged(t, "live session", s, before)
	if _, err := h.svc.Get(t.Context(), s.Key(), nil); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Get after failed append = %v, want ErrNotFound", err)
	}
	wantState(t, "user scope", h.create(t, "u1", "s2", nil).State(), map[string]any{})
}

// testE1IDs: appending fills a missing id and timestamp and keeps given ones
// (E1).
func testE1IDs(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", nil)
	given := textEvent("my-id", "x", nil)
	given.Timestamp = base.Add(-time.Hour)
	h.appendEv(t, s, given)
	if given.ID != "my-id" || !given.Timestamp.Equal(base.Add(-time.Hour)) {
		t.Errorf("given id/timestamp replaced: %q %v", given.ID, given.Timestamp)
	}
	bare := textEvent("", "y", nil)
	h.appendEv(t, s, bare)
	if bare.ID == "" || bare.ID == "my-id" || bare.Timestamp.IsZero() {
		t.Errorf("missing id/timestamp not filled: %q %v", bare.ID, bare.Timestamp)
	}
	got := h.get(t, s.Key()).Events()
	wantIDs(t, "stored", got, "my-id", bare.ID)
	if len(got) == 2 {
		if !got[0].Timestamp.Equal(given.Timestamp) || !got[1].Timestamp.Equal(bare.Timestamp) {
			t.Errorf("stored timestamps %v, %v; want %v, %v", got[0].Timestamp, got[1].Timestamp, given.Timestamp, bare.Timestamp)
		}
	}
}

// testE5MarksStored: the runtime's marks on an event (a model call, the
// long-running calls started, an import) are stored and read back, by the
// appending session, a loaded copy and a trimmed one; the session's JSON,
// ADK's wire form, has only the imported mark.
func testE5MarksStored(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", nil)
	call := textEvent("call", "x", nil)
	call.LLMCall = true
	started := textEvent("started", "y", nil)
	started.MarkImported() // which drops what a client could claim: the marks come after
	started.CustomMetadata[event.MetadataStartedCalls] = []string{"c1"}
	started.CustomMetadata["own"] = "kept"
	h.appendEv(t, s, call)
	h.appendEv(t, s, started)
	h.appendEv(t, s, textEvent("last", "z", nil))
	loaded := h.get(t, s.Key())
	trimmed := h.get(t, s.Key())
	trimmed.Trim(0)
	appended := s
	appended.Trim(0)
	for name, got := range map[string]*session.Session{"loaded": loaded, "trimmed": trimmed, "appended then trimmed": appended} {
		evs := got.Events()
		if len(evs) != 3 {
			t.Fatalf("%s: %d events, want 3", name, len(evs))
		}
		if !evs[0].LLMCall || evs[1].LLMCall || evs[2].LLMCall {
			t.Errorf("%s: LLMCall %v %v %v, want true false false", name, evs[0].LLMCall, evs[1].LLMCall, evs[2].LLMCall)
		}
		if ids := evs[1].StartedCalls(); len(ids) != 1 || ids[0] != "c1" || !evs[1].Imported() || evs[1].CustomMetadata["own"] != "kept" {
			t.Errorf("%s: metadata %v", name, evs[1].CustomMetadata)
		}
		data, err := json.Marshal(got)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if bytes.Contains(data, []byte(event.MetadataLLMCall)) || bytes.Contains(data, []byte(event.MetadataStartedCalls)) {
			t.Errorf("%s: the session's JSON has a runtime mark: %s", name, data)
		}
		if !bytes.Contains(data, []byte(`"customMetadata":{"loomImported":true,"own":"kept"}`)) {
			t.Errorf("%s: the session's JSON lost the imported mark or the event's metadata: %s", name, data)
		}
	}
}

// richEvent returns an event that sets most fields, to check that a backend
// stores events without loss.
func richEvent() *event.Event {
	ts := base.Add(2*time.Hour + 123456*time.Microsecond)
	fail := false
	score := 0.25
	e := &event.Event{
		ID:                 "rich-1",
		InvocationID:       "e-rich",
		Author:             "root_agent",
		Branch:             "root_agent.helper",
		Timestamp:          ts,
		LongRunningToolIDs: []string{"call-2"},
		Response: model.Response{
			Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
				{Text: "thinking", Thought: true, ThoughtSignature: []byte{1, 2, 3}},
				{Text: "héllo \u2603 \"quoted\"\n"},
				{FunctionCall: &genai.FunctionCall{ID: "call-1", Name: "lookup", Args: map[string]any{
					"snake_key": "v", "nested": map[string]any{"a": []any{1.0, "two", nil, true}}, "n": 3.5}}},
				{FunctionResponse: &genai.FunctionResponse{ID: "call-0", Name: "prev", Response: map[string]any{"result_value": 42.0}}},
				{InlineData: &genai.Blob{MIMEType: "image/png", Data: []byte{0, 255, 254, 10, 13}}},
			}},
			CustomMetadata: map[string]any{"trace_id": "abc", "deep": map[string]any{"x": 1.0}},
			UsageMetadata:  &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 5, TotalTokenCount: 15},
			FinishReason:   genai.FinishReasonStop,
			ErrorCode:      "SAFETY",
			ErrorMessage:   "blocked",
			TurnComplete:   true,
			Interrupted:    fail,
			AvgLogprobs:    score,
			ModelVersion:   "m-1",
		},
		Actions: event.Actions{
			SkipSummarization: true,
			StateDelta:        map[string]any{"user_name": "Ann", "obj": map[string]any{"inner_key": []any{"x"}}},
			ArtifactDelta:     map[string]int64{"report.txt": 2},
			TransferToAgent:   "helper",
			Escalate:          true,
			RequestedToolConfirmations: map[string]event.ToolConfirmation{
				"call-2": {Hint: "ok?", Payload: map[string]any{"amount": 5.0}},
			},
			RequestedAuthConfigs: map[string]any{"call-3": map[string]any{"auth_scheme": "oauth2"}},
			Compaction: &event.Compaction{Start: base, End: base.Add(time.Minute),
				Content: genai.NewContentFromText("summary", genai.RoleModel)},
			EndOfAgent:               true,
			AgentState:               map[string]any{"step": 2.0},
			RewindBeforeInvocationID: "e-old",
		},
	}
	return e
}

// testEventRoundTrip: a stored event reads back equal to what was committed.
func testEventRoundTrip(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", nil)
	ev := richEvent()
	want, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	h.appendEv(t, s, ev)
	evs := h.get(t, s.Key()).Events()
	if len(evs) != 1 {
		t.Fatalf("stored %d events, want 1", len(evs))
	}
	got, err := json.Marshal(evs[0])
	if err != nil {
		t.Fatal(err)
	}
	if canon(json.RawMessage(got)) != canon(json.RawMessage(want)) {
		t.Errorf("stored event differs:\n got %s\nwant %s", got, want)
	}
	if !evs[0].Timestamp.Equal(ev.Timestamp) {
		t.Errorf("timestamp = %v, want %v", evs[0].Timestamp, ev.Timestamp)
	}
}

// testS13ImportedTimestamps: an imported event (event.MetadataImported)
// keeps the timestamp it was given, even one older than the event before
// it; the session's own events stay in time order from there; a window
// from a time holds the events after the last one, in log order, older
// than that time, in every backend alike (S13).
func testS13ImportedTimestamps(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", nil)
	t0 := base.Add(time.Hour)
	stamps := []time.Duration{0, 2 * time.Second, time.Second}
	for i, d := range stamps {
		ev := textEvent(fmt.Sprintf("imp-%d", i), "x", nil)
		ev.Timestamp = t0.Add(d)
		ev.MarkImported()
		if i == 1 {
			// ADK 2's fields, and fields Loom does not model, are stored.
			ev.IsolationScope = "call_1"
			ev.Actions.Route = []any{"a", 1.0}
			ev.Actions.SetModelResponse = map[string]any{"k": "v"}
			ev.Actions.RenderUIWidgets = []any{map[string]any{"id": "w"}}
			ev.Unknown = map[string]json.RawMessage{"interactionId": json.RawMessage(`"i-1"`)}
			ev.Actions.Unknown = map[string]json.RawMessage{"later": json.RawMessage(`{"a_b":1}`)}
		}
		h.appendEv(t, s, ev)
	}
	own := textEvent("own", "x", nil)
	own.Timestamp = t0
	h.appendEv(t, s, own)

	got := h.get(t, s.Key())
	evs := got.Events()
	want := []time.Time{t0, t0.Add(2 * time.Second), t0.Add(time.Second), t0.Add(time.Second)}
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d", len(evs), len(want))
	}
	for i, ev := range evs {
		if !ev.Timestamp.Equal(want[i]) {
			t.Errorf("event %s: timestamp %s, want %s", ev.ID, ev.Timestamp, want[i])
		}
	}
	if e := evs[1]; e.IsolationScope != "call_1" || !reflect.DeepEqual(e.Actions.Route, []any{"a", 1.0}) ||
		!reflect.DeepEqual(e.Actions.SetModelResponse, map[string]any{"k": "v"}) || len(e.Actions.RenderUIWidgets) != 1 ||
		string(e.Unknown["interactionId"]) != `"i-1"` || string(e.Actions.Unknown["later"]) != `{"a_b":1}` {
		t.Errorf("ADK 2 fields not stored: %+v", e)
	}
	if !got.LastUpdateTime().Equal(t0.Add(time.Second)) {
		t.Errorf("last update time %s, want that of the last event", got.LastUpdateTime())
	}
	for _, c := range []struct {
		after time.Duration
		ids   []string
	}{
		{0, []string{"imp-0", "imp-1", "imp-2", "own"}},
		{time.Second, []string{"imp-1", "imp-2", "own"}},
		{1500 * time.Millisecond, nil},
		{3 * time.Second, nil},
	} {
		w, err := h.svc.Get(t.Context(), s.Key(), &session.GetOptions{After: t0.Add(c.after)})
		if err != nil {
			t.Fatal(err)
		}
		wantIDs(t, fmt.Sprintf("After T+%s", c.after), w.Events(), c.ids...)
	}
}
