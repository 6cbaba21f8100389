package bench_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/session/memsession"
)

// floorEvent is the floor's event record: what an S1 event must hold.
type floorEvent struct {
	ID           string
	InvocationID string
	Author       string
	Timestamp    time.Time
	Content      *genai.Content
	StateDelta   map[string]any
}

// floorSession is the floor's in-memory session.
type floorSession struct {
	events []floorEvent
	state  map[string]any
}

// floorInvoke is one S1 invocation done by hand, with no framework: four
// event records appended to the session (user, call, response, final), one
// JSON decode of the model's function-call arguments, and one fold of the
// new events' state deltas into the session state.
func floorInvoke(s *floorSession, seq int, msg *genai.Content, rawArgs []byte) error {
	inv := "inv-" + fmt.Sprint(seq)
	start := len(s.events)
	now := time.Now()
	s.events = append(s.events, floorEvent{ID: inv + "-0", InvocationID: inv, Author: "user", Timestamp: now, Content: msg})

	var args struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	if err := json.Unmarshal(rawArgs, &args); err != nil {
		return err
	}
	call := &genai.FunctionCall{ID: inv + "-call", Name: "add", Args: map[string]any{"a": args.A, "b": args.B}}
	s.events = append(s.events, floorEvent{ID: inv + "-1", InvocationID: inv, Author: "calculator", Timestamp: now,
		Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: call}}}})
	resp := &genai.FunctionResponse{ID: call.ID, Name: "add", Response: map[string]any{"result": args.A + args.B}}
	s.events = append(s.events, floorEvent{ID: inv + "-2", InvocationID: inv, Author: "calculator", Timestamp: now,
		Content: &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: resp}}}})
	s.events = append(s.events, floorEvent{ID: inv + "-3", InvocationID: inv, Author: "calculator", Timestamp: now,
		Content: genai.NewContentFromText("3", genai.RoleModel)})

	for _, ev := range s.events[start:] {
		for k, v := range ev.StateDelta {
			s.state[k] = v
		}
	}
	return nil
}

// BenchmarkS1Floor is the floor under S1: the same essential work as one S1
// invocation (see floorInvoke), round-robin over 100 sessions, with no
// framework; ns/op is the floor's. It then reports S1's cost as a multiple
// of the floor (S1/floor), measured by s1FloorRatio.
func BenchmarkS1Floor(b *testing.B) {
	sessions := newFloorSessions()
	rawArgs := []byte(`{"a":1,"b":2}`)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := floorInvoke(sessions[i%len(sessions)], i, s1Message, rawArgs); err != nil {
			b.Fatal(err)
		}
	}
	checkFloorSessions(b, sessions, b.N)
	b.StopTimer()
	sessions = nil
	b.ReportMetric(s1FloorRatio(b, rawArgs), "S1/floor")
}

// s1FloorRatioRounds is the number of rounds s1FloorRatio takes the
// median of.
const s1FloorRatioRounds = 7

// s1FloorRatio returns S1's cost as a multiple of the floor's: the median
// over s1FloorRatioRounds rounds, each of 2,000 S1 invocations and 2,000
// floor invocations round-robin over 100 new sessions, timed in
// alternating blocks of 100 so that both run on the same machine at the
// same moments. Each round starts after a garbage collection, with
// nothing left of the rounds before. (Timed one after the other, a change
// in the load of a shared machine between the two moved the ratio by a
// factor of two; a single round moved it by as much, with a collection
// of an earlier round's garbage falling into one of its blocks.)
func s1FloorRatio(b *testing.B, rawArgs []byte) float64 {
	const invocations, block = 2000, 100
	ratios := make([]float64, s1FloorRatioRounds)
	var floorSum, s1Sum time.Duration
	for round := range ratios {
		floorSessions := newFloorSessions()
		svc := memsession.NewService()
		r := newRunner(b, newS1Agent(b), svc)
		ids := createSessions(b, svc, len(floorSessions))
		runtime.GC()
		var floor, s1 time.Duration
		for start := 0; start < invocations; start += block {
			t0 := time.Now()
			for i := start; i < start+block; i++ {
				if err := floorInvoke(floorSessions[i%len(floorSessions)], i, s1Message, rawArgs); err != nil {
					b.Fatal(err)
				}
			}
			t1 := time.Now()
			for i := start; i < start+block; i++ {
				invoke(b, r, ids[i%len(ids)])
			}
			floor, s1 = floor+t1.Sub(t0), s1+time.Since(t1)
		}
		checkFloorSessions(b, floorSessions, invocations)
		checkS1Sessions(b, svc, ids, invocations)
		ratios[round] = float64(s1) / float64(floor)
		floorSum, s1Sum = floorSum+floor, s1Sum+s1
	}
	slices.Sort(ratios)
	n := float64(invocations * s1FloorRatioRounds)
	b.Logf("interleaved, %d rounds: floor %.0f ns/inv, S1 %.0f ns/inv on average; S1/floor per round %.1f; median %.1f",
		s1FloorRatioRounds, float64(floorSum.Nanoseconds())/n, float64(s1Sum.Nanoseconds())/n, ratios, ratios[len(ratios)/2])
	return ratios[len(ratios)/2]
}

// newFloorSessions returns the floor's 100 empty sessions.
func newFloorSessions() []*floorSession {
	sessions := make([]*floorSession, 100)
	for i := range sessions {
		sessions[i] = &floorSession{state: map[string]any{}}
	}
	return sessions
}

// checkFloorSessions checks that n floor invocations round-robin over
// sessions stored their four events each.
func checkFloorSessions(b *testing.B, sessions []*floorSession, n int) {
	b.Helper()
	for i, s := range sessions {
		if want := 4 * (n/len(sessions) + min(1, max(0, n%len(sessions)-i))); len(s.events) != want {
			b.Fatalf("floor session %d holds %d events, want %d", i, len(s.events), want)
		}
	}
}
