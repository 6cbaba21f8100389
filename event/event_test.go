package event_test

import (
	"encoding/json"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// TestE1NewIDsAndTimestamps: new events get distinct UUID v4 ids and
// microsecond timestamps (E1).
func TestE1NewIDsAndTimestamps(t *testing.T) {
	seen := map[string]bool{}
	before := time.Now().Add(-time.Second)
	for i := range 200 {
		var e *event.Event
		if i%2 == 0 {
			e = event.New("e-1", "agent")
		} else {
			e = event.NewUserText("e-1", "hi")
		}
		u, err := uuid.Parse(e.ID)
		if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != e.ID {
			t.Fatalf("event id %q is not a canonical UUID v4 (%v)", e.ID, err)
		}
		if seen[e.ID] {
			t.Fatalf("duplicate event id %q", e.ID)
		}
		seen[e.ID] = true
		if e.Timestamp.Before(before) || e.Timestamp.After(time.Now()) {
			t.Errorf("timestamp %v is not the current time", e.Timestamp)
		}
		if e.Timestamp.Nanosecond()%1000 != 0 {
			t.Errorf("timestamp %v has sub-microsecond precision", e.Timestamp)
		}
		if e.InvocationID != "e-1" {
			t.Errorf("invocation id = %q", e.InvocationID)
		}
	}
	u := event.NewUserText("e-1", "hello")
	if u.Author != event.AuthorUser || u.Content.Role != genai.RoleUser || u.Text() != "hello" {
		t.Errorf("NewUserText = author %q role %q text %q", u.Author, u.Content.Role, u.Text())
	}
	m := event.NewModelText("e-1", "bot", "hey")
	if m.Author != "bot" || m.Content.Role != genai.RoleModel || m.Text() != "hey" {
		t.Errorf("NewModelText = author %q role %q text %q", m.Author, m.Content.Role, m.Text())
	}
	inv := event.NewInvocationID()
	if !strings.HasPrefix(inv, "e-") {
		t.Errorf("invocation id %q lacks the e- prefix", inv)
	} else if u, err := uuid.Parse(inv[2:]); err != nil || u.Version() != 4 {
		t.Errorf("invocation id %q is not e- + UUID v4", inv)
	}
}

// TestE1TimestampSurvivesWire: a new event's timestamp round-trips through
// float seconds exactly (E1).
func TestE1TimestampSurvivesWire(t *testing.T) {
	for range 100 {
		e := event.New("e-1", "a")
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var got event.Event
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if !got.Timestamp.Equal(e.Timestamp) {
			t.Fatalf("timestamp %v decoded as %v (%s)", e.Timestamp, got.Timestamp, b)
		}
	}
	for _, tc := range []struct {
		t    time.Time
		want string
	}{
		{time.Unix(1747130000, 123456000), "1747130000.123456"},
		{time.Unix(1747130000, 100000000), "1747130000.1"},
		{time.Unix(1747130000, 0), "1747130000"},
		{time.Unix(1747130000, 999).Truncate(time.Microsecond), "1747130000"},
		{time.UnixMicro(-1500000), "-1.5"},
		{time.UnixMicro(-1), "-0.000001"},
	} {
		b, err := event.Seconds(tc.t).MarshalJSON()
		if err != nil || string(b) != tc.want {
			t.Errorf("Seconds(%v) = %s, %v; want %s", tc.t, b, err, tc.want)
		}
		if got := event.FromSeconds(event.ToSeconds(tc.t)); !got.Equal(tc.t) {
			t.Errorf("FromSeconds(ToSeconds(%v)) = %v", tc.t, got)
		}
	}
}

// TestE4TimestampDecoding: wire timestamps decode exactly to the
// microsecond, encode back to the same text, numbers beyond the year 5138 as
// seconds are milliseconds, and out-of-range values are an error rather
// than a wrapped-around time (E4; found by FuzzDecode).
func TestE4TimestampDecoding(t *testing.T) {
	for in, want := range map[string]string{
		"1747130000.123456":  "1747130000.123456",
		"1747130000.1234565": "1747130000.123457",
		"1747130000.000000":  "1747130000",
		"10413792000.654321": "10413792000.654321", // year 2300: beyond float64's microsecond precision
		"99999999999.999999": "99999999999.999999", // the last second read as seconds (year 5138)
		"1763856000123":      "1763856000.123",     // milliseconds
		"-2.5":               "-2.5",
		"1.7471300005e9":     "1747130000.5",
		"0":                  "0",
	} {
		var s event.Seconds
		if err := s.UnmarshalJSON([]byte(in)); err != nil {
			t.Errorf("decode %s: %v", in, err)
			continue
		}
		if got, _ := s.MarshalJSON(); string(got) != want {
			t.Errorf("decode %s → encode %s, want %s", in, got, want)
		}
	}
	for _, in := range []string{`"5138-11-16T09:46:40Z"`, "100000000000000", "1e14", "-1e300", `"soon"`, "true"} {
		var s event.Seconds
		if err := s.UnmarshalJSON([]byte(in)); err == nil {
			t.Errorf("decode %s = %v, want an error", in, time.Time(s))
		}
	}
}

// TestE1AppendKeepsGivenID: the session service keeps an id already set and
// fills a missing one (E1).
func TestE1AppendKeepsGivenID(t *testing.T) {
	ctx := t.Context()
	svc := memsession.NewService()
	s, err := svc.Create(ctx, session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	given := event.NewModelText("e-1", "bot", "a")
	id, ts := given.ID, given.Timestamp
	if err := svc.AppendEvent(ctx, s, given); err != nil {
		t.Fatal(err)
	}
	if given.ID != id || !given.Timestamp.Equal(ts) {
		t.Errorf("append replaced id/timestamp: %q %v, want %q %v", given.ID, given.Timestamp, id, ts)
	}
	bare := &event.Event{InvocationID: "e-1", Author: "bot"}
	if err := svc.AppendEvent(ctx, s, bare); err != nil {
		t.Fatal(err)
	}
	if u, err := uuid.Parse(bare.ID); err != nil || u.Version() != 4 {
		t.Errorf("filled id %q is not a UUID v4", bare.ID)
	}
	if bare.Timestamp.IsZero() {
		t.Error("append left the timestamp zero")
	}
	got, err := svc.Get(ctx, s.Key(), nil)
	if err != nil {
		t.Fatal(err)
	}
	evs := got.Events()
	if len(evs) != 2 || evs[0].ID != id || evs[1].ID != bare.ID {
		t.Errorf("stored ids %v, want [%s %s]", evs, id, bare.ID)
	}
}

func part(p genai.Part) *genai.Part { return &p }

// TestE2IsFinalResponse is the truth table of CONFORMANCE E2.
func TestE2IsFinalResponse(t *testing.T) {
	call := part(genai.Part{FunctionCall: &genai.FunctionCall{ID: "c1", Name: "f"}})
	resp := part(genai.Part{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "f"}})
	text := part(genai.Part{Text: "hi"})
	code := part(genai.Part{CodeExecutionResult: &genai.CodeExecutionResult{Outcome: genai.OutcomeOK, Output: "1"}})
	exec := part(genai.Part{ExecutableCode: &genai.ExecutableCode{Code: "print(1)", Language: genai.LanguagePython}})
	content := func(ps ...*genai.Part) *genai.Content { return &genai.Content{Role: genai.RoleModel, Parts: ps} }

	for _, tc := range []struct {
		name string
		e    event.Event
		want bool
	}{
		{"plain text", event.Event{Response: r(content(text))}, true},
		{"no content", event.Event{}, true},
		{"empty parts", event.Event{Response: r(content())}, true},
		{"function call", event.Event{Response: r(content(call))}, false},
		{"text and function call", event.Event{Response: r(content(text, call))}, false},
		{"function response", event.Event{Response: r(content(resp))}, false},
		{"partial text", event.Event{Response: rp(content(text))}, false},
		{"partial without content", event.Event{Response: rp(nil)}, false},
		{"trailing code result", event.Event{Response: r(content(exec, code))}, false},
		{"code result then text", event.Event{Response: r(content(code, text))}, true},
		{"executable code only", event.Event{Response: r(content(exec))}, true},
		{"function response with skip_summarization", event.Event{Response: r(content(resp)),
			Actions: event.Actions{SkipSummarization: true}}, true},
		{"long-running function call", event.Event{Response: r(content(call)), LongRunningToolIDs: []string{"c1"}}, true},
		{"function call, other call long-running", event.Event{Response: r(content(call)), LongRunningToolIDs: []string{"c9"}}, true},
	} {
		if got := tc.e.IsFinalResponse(); got != tc.want {
			t.Errorf("%s: IsFinalResponse = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// r and rp build responses with and without Partial.
func r(c *genai.Content) model.Response  { return model.Response{Content: c} }
func rp(c *genai.Content) model.Response { return model.Response{Content: c, Partial: true} }

// TestE3BareEventJSON: the wire form of a bare event (E3).
func TestE3BareEventJSON(t *testing.T) {
	b, err := json.Marshal(&event.Event{})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"timestamp":0}`
	if string(b) != want {
		t.Errorf("bare event = %s\nwant %s", b, want)
	}
	// Also through a value and inside a slice, as servers encode them.
	b, err = json.Marshal([]*event.Event{{Author: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "null") || !strings.Contains(string(b), `"stateDelta":{}`) {
		t.Errorf("event in a slice = %s", b)
	}
	b, err = json.Marshal(event.Actions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}}` {
		t.Errorf("bare actions = %s", b)
	}
}

var snakeKey = regexp.MustCompile(`"[a-z:]+_[a-z_]+":`)

// TestE3WireKeys: camelCase keys, flattened response fields, untouched state
// keys, float-seconds timestamp and no nulls (E3).
func TestE3WireKeys(t *testing.T) {
	e := &event.Event{
		Response: model.Response{
			Content:      genai.NewContentFromText("hi", genai.RoleModel),
			Partial:      true,
			TurnComplete: true,
			ErrorCode:    "E", ErrorMessage: "m",
			FinishReason:  genai.FinishReasonStop,
			UsageMetadata: &genai.GenerateContentResponseUsageMetadata{TotalTokenCount: 3},
		},
		ID:                 "id-1",
		InvocationID:       "e-1",
		Author:             "root_agent",
		Branch:             "root_agent",
		Timestamp:          time.Unix(1747130000, 123456000),
		LongRunningToolIDs: []string{"c1"},
		Actions: event.Actions{
			StateDelta:      map[string]any{"user_name": "Ann", "temp:x": 1, "app:snake_case": nil},
			TransferToAgent: "other",
		},
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"content", "partial", "turnComplete", "errorCode", "errorMessage", "finishReason",
		"usageMetadata", "invocationId", "author", "branch", "id", "timestamp", "longRunningToolIds", "actions"} {
		if _, ok := m[k]; !ok {
			t.Errorf("top-level key %q missing in %s", k, b)
		}
	}
	if _, ok := m["response"]; ok {
		t.Error("response fields are nested, want them flattened")
	}
	if m["finishReason"] != "STOP" {
		t.Errorf("finishReason = %v", m["finishReason"])
	}
	s := string(b)
	if !strings.Contains(s, `"timestamp":1747130000.123456`) {
		t.Errorf("timestamp is not float seconds: %s", s)
	}
	for _, k := range []string{`"user_name":"Ann"`, `"temp:x":1`, `"app:snake_case":null`, `"transferToAgent":"other"`} {
		if !strings.Contains(s, k) {
			t.Errorf("missing %s in %s", k, s)
		}
	}
	// The only snake_case key is the user's own; the only null is the
	// deletion the user asked for.
	if got := snakeKey.FindAllString(s, -1); len(got) != 2 {
		t.Errorf("snake_case keys %v in %s", got, s)
	}
	if strings.Count(s, "null") != 1 {
		t.Errorf("unexpected nulls in %s", s)
	}
}

// TestE1NewIDsAllocateOnce: event, invocation and generated call ids are
// built sixteen to an allocation (at most one allocation per id, one per
// sixteen on average), and are their prefix + a canonical UUID v4.
func TestE1NewIDsAllocateOnce(t *testing.T) {
	if !raceEnabled { // the race detector's instrumentation allocates
		for name, make := range map[string]func() string{"NewID": event.NewID, "NewInvocationID": event.NewInvocationID, "NewCallID": event.NewCallID} {
			if n := testing.AllocsPerRun(100, func() { _ = make() }); n > 1 {
				t.Errorf("%s allocates %v times, want at most 1", name, n)
			}
			const ids = 1600
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range ids {
				_ = make()
			}
			runtime.ReadMemStats(&after)
			if n := after.Mallocs - before.Mallocs; n > ids/16+ids/64 {
				t.Errorf("%d ids of %s took %d allocations, want about one per sixteen", ids, name, n)
			}
		}
	}
	seen := map[string]bool{}
	for range 100 {
		id := event.NewCallID()
		u, err := uuid.Parse(strings.TrimPrefix(id, event.GeneratedCallIDPrefix))
		if err != nil || !strings.HasPrefix(id, event.GeneratedCallIDPrefix) || u.Version() != 4 || u.Variant() != uuid.RFC4122 ||
			event.GeneratedCallIDPrefix+u.String() != id || seen[id] {
			t.Fatalf("call id %q is not a new %s + canonical UUID v4 (%v)", id, event.GeneratedCallIDPrefix, err)
		}
		seen[id] = true
	}
	for range 100 {
		inv := event.NewInvocationID()
		u, err := uuid.Parse(strings.TrimPrefix(inv, "e-"))
		if err != nil || !strings.HasPrefix(inv, "e-") || u.Version() != 4 || u.Variant() != uuid.RFC4122 || "e-"+u.String() != inv {
			t.Fatalf("invocation id %q is not e- + a canonical UUID v4 (%v)", inv, err)
		}
	}
}

// TestIDsAreDistinctAcrossGoroutines makes ids of each kind from several
// goroutines at once (ids are made in runs that goroutines take turns
// with): every one is a canonical UUID v4 after its prefix, and none
// repeats.
func TestIDsAreDistinctAcrossGoroutines(t *testing.T) {
	kinds := []struct {
		prefix string
		make   func() string
	}{{"", event.NewID}, {"e-", event.NewInvocationID}, {event.GeneratedCallIDPrefix, event.NewCallID}}
	const goroutines, each = 8, 500
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				k := kinds[(g+i)%len(kinds)]
				id := k.make()
				rest, ok := strings.CutPrefix(id, k.prefix)
				u, err := uuid.Parse(rest)
				if !ok || err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != rest {
					t.Errorf("id %q is not %q and a canonical UUID v4 (%v)", id, k.prefix, err)
					return
				}
				mu.Lock()
				dup := seen[id]
				seen[id] = true
				mu.Unlock()
				if dup {
					t.Errorf("id %q made twice", id)
					return
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != goroutines*each {
		t.Fatalf("%d distinct ids, want %d", len(seen), goroutines*each)
	}
}
