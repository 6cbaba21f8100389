package agent_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// TestT3PendingInLongTrimmedSession: the answer to a long-running call made
// a thousand events ago is matched to it, and an answer to no call is
// refused, each without decoding the events between (decoding them all
// would take thousands of allocations).
func TestT3PendingInLongTrimmedSession(t *testing.T) {
	sess := longPendingSession(t)
	allocs := testing.AllocsPerRun(10, func() {
		pcs, err := agent.Pending(sess, answer("call-1"))
		if err != nil || len(pcs) != 1 || pcs[0].CallIndex != 1 || pcs[0].Kind != agent.PauseTool || pcs[0].InvocationID != "e-1" {
			t.Fatalf("pending %+v, %v", pcs, err)
		}
	})
	if allocs > 100 {
		t.Errorf("%v allocations to find a call 1,000 events back", allocs)
	}
	allocs = testing.AllocsPerRun(10, func() {
		if _, err := agent.Pending(sess, answer("call-2")); !errors.Is(err, agent.ErrNotPending) {
			t.Fatalf("an answer to no call: %v", err)
		}
	})
	if allocs > 100 {
		t.Errorf("%v allocations to refuse an answer to no call", allocs)
	}
}

// longPendingSession returns a trimmed session whose second event makes
// the long-running call "call-1", followed by 1,000 other events.
func longPendingSession(tb testing.TB) *session.Session {
	tb.Helper()
	ctx := context.Background()
	svc := memsession.NewService()
	sess, err := svc.Create(ctx, session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	call := event.New("e-1", "agent")
	call.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: "call-1", Name: "approve"}}}}
	call.LongRunningToolIDs = []string{"call-1"}
	evs := []*event.Event{event.NewUserText("e-1", "start"), call}
	for range 1000 {
		evs = append(evs, event.NewModelText("e-2", "agent", "meanwhile"))
	}
	for _, ev := range evs {
		if err := svc.AppendEvent(ctx, sess, ev); err != nil {
			tb.Fatal(err)
		}
	}
	sess.Trim(4)
	return sess
}

// answer is a client message answering the call id.
func answer(id string) *genai.Content {
	return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: id, Name: "approve", Response: map[string]any{"ok": true}}}}}
}

// BenchmarkPendingLongSession matches an answer to a call 1,000 events
// back in a trimmed session.
func BenchmarkPendingLongSession(b *testing.B) {
	sess := longPendingSession(b)
	msg := answer("call-1")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := agent.Pending(sess, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// TestT3FirstWaitingAgreesWithWaiting: on random logs of pausing calls
// (long-running tools and requests to the client), answers by the client
// and interim ones by agents, reused ids and other events, FirstWaiting
// finds the call that a walk asking Waiting of every pausing call finds,
// whether the session holds its events decoded or encoded.
func TestT3FirstWaitingAgreesWithWaiting(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	waiting := 0
	for round := range 300 {
		svc := memsession.NewService()
		sess, err := svc.Create(ctx, session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for range 1 + rng.IntN(30) {
			id := fmt.Sprint("call-", rng.IntN(5))
			var ev *event.Event
			switch rng.IntN(6) {
			case 0: // a pausing call, or a call that does not pause
				ev = event.New("e-1", "agent")
				name := []string{"approve", event.FunctionRequestConfirmation}[rng.IntN(2)]
				ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: id, Name: name}}}}
				if rng.IntN(4) > 0 {
					ev.LongRunningToolIDs = []string{id}
				}
			case 1, 2, 3: // an answer, by the client or by an agent
				author := []string{event.AuthorUser, "agent"}[rng.IntN(2)]
				ev = event.New("e-1", author)
				ev.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: id, Name: "approve", Response: map[string]any{}}}}}
			default:
				ev = event.NewModelText("e-1", "agent", "text that quotes "+id)
			}
			if err := svc.AppendEvent(ctx, sess, ev); err != nil {
				t.Fatal(err)
			}
		}
		want := -1
		events := sess.Events()
		for i, ev := range events {
			calls, kinds := agent.PausingCalls(ev)
			for j, fc := range calls {
				if want < 0 && agent.Waiting(events[i+1:], kinds[j], fc.ID) {
					want = i
				}
			}
		}
		for _, trim := range []bool{false, true} {
			if trim {
				sess.Trim(0)
			}
			if got, ok := agent.FirstWaiting(sess); got != want || ok != (want >= 0) {
				t.Fatalf("round %d, trimmed %v: FirstWaiting = %d, %v; want %d", round, trim, got, ok, want)
			}
		}
		if want >= 0 {
			waiting++
		}
	}
	if waiting < 60 || waiting > 240 {
		t.Errorf("%d of 300 logs have a waiting call: the cases are not mixed", waiting)
	}
}

// TestT6PendingCallsOfOneBranch: a message may answer several calls of one
// branch, but not calls of two branches or of two invocations; and a call a
// rewind took back neither waits nor can be answered, whether the session
// holds its events decoded or encoded (CONFORMANCE T5, T6).
func TestT6PendingCallsOfOneBranch(t *testing.T) {
	ctx := context.Background()
	svc := memsession.NewService()
	sess, err := svc.Create(ctx, session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := func(inv, branch string, ids ...string) *event.Event {
		ev := event.New(inv, "agent")
		ev.Branch = branch
		ev.Content = &genai.Content{Role: genai.RoleModel}
		for _, id := range ids {
			ev.Content.Parts = append(ev.Content.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: id, Name: "approve"}})
		}
		ev.LongRunningToolIDs = ids
		return ev
	}
	rewind := event.New("e-3", "user")
	rewind.Actions.RewindBeforeInvocationID = "e-2"
	for _, ev := range []*event.Event{
		event.NewUserText("e-1", "start"), call("e-1", "par.a", "a1", "a2"), call("e-1", "par.b", "b1"),
		event.NewUserText("e-2", "again"), call("e-2", "", "c1"), rewind,
		event.NewUserText("e-4", "later"), call("e-4", "", "d1"),
	} {
		if err := svc.AppendEvent(ctx, sess, ev); err != nil {
			t.Fatal(err)
		}
	}
	msg := func(ids ...string) *genai.Content {
		m := &genai.Content{Role: genai.RoleUser}
		for _, id := range ids {
			m.Parts = append(m.Parts, answer(id).Parts...)
		}
		return m
	}
	for _, trim := range []bool{false, true} {
		if trim {
			sess.Trim(0)
		}
		if pcs, err := agent.Pending(sess, msg("a1", "a2")); err != nil || len(pcs) != 2 || pcs[1].Branch != "par.a" {
			t.Errorf("trimmed %v: two calls of one branch: %+v, %v", trim, pcs, err)
		}
		for _, c := range []struct {
			ids  []string
			want string
		}{{[]string{"a1", "b1"}, "two branches"}, {[]string{"a1", "d1"}, "two invocations"}, {[]string{"c1"}, `"c1"`}} {
			if _, err := agent.Pending(sess, msg(c.ids...)); !errors.Is(err, agent.ErrNotPending) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("trimmed %v: answers to %v: %v, want ErrNotPending naming %s", trim, c.ids, err, c.want)
			}
		}
		if i, ok := agent.FirstWaiting(sess); !ok || i != 1 {
			t.Errorf("trimmed %v: FirstWaiting = %d, %v; want 1 (the rewound call does not wait)", trim, i, ok)
		}
	}
}

// TestT3AskedInputWaits: a workflow node's adk_request_input call pauses
// as a request for input (agent.PauseInput); Asked finds it, waiting until
// the user's answer and not after, and does not find a call the events do
// not hold.
func TestT3AskedInputWaits(t *testing.T) {
	call := event.New("e-1", "approve")
	call.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: "in-1", Name: event.FunctionRequestInput}}}}
	call.LongRunningToolIDs = []string{"in-1"}
	if _, kinds := agent.PausingCalls(call); len(kinds) != 1 || kinds[0] != agent.PauseInput {
		t.Fatalf("kinds %v, want [PauseInput]", kinds)
	}
	evs := []*event.Event{event.NewUserText("e-1", "refund"), call, event.NewModelText("e-1", "other", "meanwhile")}
	if asked, waiting := agent.Asked(evs, "in-1"); !asked || !waiting {
		t.Fatalf("before the answer: asked %v, waiting %v; want true, true", asked, waiting)
	}
	if asked, _ := agent.Asked(evs, "in-2"); asked {
		t.Fatal("a call the events do not hold was found")
	}
	ans := event.New("e-1", event.AuthorUser)
	ans.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: "in-1", Name: event.FunctionRequestInput, Response: map[string]any{"ok": true}}}}}
	if asked, waiting := agent.Asked(append(evs, ans), "in-1"); !asked || waiting {
		t.Fatalf("after the answer: asked %v, waiting %v; want true, false", asked, waiting)
	}
}

// TestT2LedgerReadsConfirmations checks the ledger's reading of a
// confirmation: the call a request is about, the client's approval of that
// call in the invocation (the latest answer wins, anything but an explicit
// yes rejects), and which replies a client shown waiting calls may send.
func TestT2LedgerReadsConfirmations(t *testing.T) {
	request := func(id, about string) *genai.FunctionCall {
		return &genai.FunctionCall{ID: id, Name: event.FunctionRequestConfirmation, Args: map[string]any{
			agent.ArgOriginalCall: map[string]any{"id": about, "name": "delete_file", "args": map[string]any{"path": "/tmp/x"}}}}
	}
	orig, err := agent.OriginalCall(request("r1", "c1"))
	if err != nil || orig.ID != "c1" || orig.Name != "delete_file" || orig.Args["path"] != "/tmp/x" {
		t.Fatalf("original call = %+v, %v", orig, err)
	}
	if _, err := agent.OriginalCall(&genai.FunctionCall{ID: "r2", Name: event.FunctionRequestConfirmation}); err == nil {
		t.Error("a request without its original call was read")
	}
	reply := func(id string, resp map[string]any) *event.Event {
		return &event.Event{Author: event.AuthorUser, Response: model.Response{Content: &genai.Content{Role: genai.RoleUser,
			Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: id, Name: event.FunctionRequestConfirmation, Response: resp}}}}}}
	}
	asks := func(fc *genai.FunctionCall) *event.Event {
		return &event.Event{Author: "root", Response: model.Response{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: fc}}}}}
	}
	evs := []*event.Event{asks(request("r1", "c1")), reply("r1", map[string]any{"confirmed": false}),
		asks(request("r2", "c1")), reply("r2", map[string]any{"response": map[string]any{"confirmed": true}, "payload": 7}),
		asks(request("r3", "c9")), reply("r3", map[string]any{"confirmed": "yes"})}
	if a := agent.Approval(evs, "c1"); a == nil || !a.Confirmed || a.Payload != 7 {
		t.Errorf("approval of c1 = %+v, want the latest answer, confirmed", a)
	}
	if a := agent.Approval(evs, "c9"); a == nil || a.Confirmed {
		t.Errorf("approval of c9 = %+v, want a rejection: only true approves", a)
	}
	if a := agent.Approval(evs, "c2"); a != nil {
		t.Errorf("approval of an unasked call = %+v", a)
	}
	waiting := []*genai.FunctionCall{request("r1", "c1"), {ID: "t1", Name: "open_ticket"}}
	if err := agent.CheckReplies(waiting, []*genai.FunctionResponse{{ID: "t1"}, {ID: "r1"}}); err != nil {
		t.Errorf("answers to the waiting calls: %v", err)
	}
	if err := agent.CheckReplies(waiting, []*genai.FunctionResponse{{ID: "t2"}}); !errors.Is(err, agent.ErrNotPending) {
		t.Errorf("an answer to another call: %v, want ErrNotPending", err)
	}
	if err := agent.CheckReplies(waiting, []*genai.FunctionResponse{{ID: "t1"}, {ID: "t1"}}); !errors.Is(err, agent.ErrNotPending) {
		t.Errorf("two answers to one call: %v, want ErrNotPending", err)
	}
}

func ExampleOriginalCall() {
	request := &genai.FunctionCall{ID: "r1", Name: event.FunctionRequestConfirmation, Args: map[string]any{
		agent.ArgOriginalCall: map[string]any{"id": "c1", "name": "delete_file"}}}
	orig, err := agent.OriginalCall(request)
	fmt.Println(orig.ID, orig.Name, err)
	// Output: c1 delete_file <nil>
}

func ExampleCheckReplies() {
	waiting := []*genai.FunctionCall{{ID: "t1", Name: "open_ticket"}}
	fmt.Println(agent.CheckReplies(waiting, []*genai.FunctionResponse{{ID: "t1"}}))
	fmt.Println(agent.CheckReplies(waiting, []*genai.FunctionResponse{{ID: "t2"}}))
	// Output:
	// <nil>
	// agent: no pending call: no pending function call with id "t2"
}

// relayingRequest is the confirmation request of an agent tool whose
// paused child waits on call (as tool/agenttool records it, in its JSON
// form).
func relayingRequest(id string, call map[string]any) *genai.FunctionCall {
	return &genai.FunctionCall{ID: id, Name: event.FunctionRequestConfirmation, Args: map[string]any{
		"originalFunctionCall": map[string]any{"id": "tool-" + id, "name": "helper", "args": map[string]any{}},
		"toolConfirmation": map[string]any{"hint": "Sign in", "confirmed": false, "payload": map[string]any{
			agent.ChildPauseKey: map[string]any{"invocationId": "e-child", "events": []any{}, "waiting": []any{call}},
		}},
	}}
}

// TestT17T22TakeCredentials: the ledger takes out of a message, before it
// is stored, the answer to a credential request and the payload of the
// answer to a confirmation that relays one from a paused agent tool (at
// any depth), keeping the approval alone; it leaves other answers as
// they are, and the taken answers are what the invocation delivers to
// their owners.
//
// (CONFORMANCE T17, T22)
func TestT17T22TakeCredentials(t *testing.T) {
	credCall := map[string]any{"id": "cred-1", "name": event.FunctionRequestCredential, "args": map[string]any{"authConfig": map[string]any{}}}
	relay := relayingRequest("conf-1", credCall)
	nested := relayingRequest("conf-2", map[string]any{"id": relay.ID, "name": relay.Name, "args": relay.Args})
	input := relayingRequest("conf-3", map[string]any{"id": "in-1", "name": event.FunctionRequestInput, "args": map[string]any{}})
	plain := &genai.FunctionCall{ID: "conf-4", Name: event.FunctionRequestConfirmation, Args: map[string]any{
		"toolConfirmation": map[string]any{"hint": "Refund?", "payload": map[string]any{"amount": 3.0}}}}
	for _, fc := range []*genai.FunctionCall{relay, nested} {
		if !agent.AsksCredential(fc) {
			t.Errorf("AsksCredential(%s) = false, want true", fc.ID)
		}
	}
	for _, fc := range []*genai.FunctionCall{input, plain} {
		if agent.AsksCredential(fc) {
			t.Errorf("AsksCredential(%s) = true, want false", fc.ID)
		}
	}

	secret := map[string]any{"exchangedAuthCredential": map[string]any{"oauth2": map[string]any{"authResponseUri": "http://x/cb?code=the-code"}}}
	calls := []agent.PendingCall{
		{Call: &genai.FunctionCall{ID: "cred-0", Name: event.FunctionRequestCredential}, Kind: agent.PauseCredential},
		{Call: relay, Kind: agent.PauseConfirmation},
		{Call: nested, Kind: agent.PauseConfirmation},
		{Call: input, Kind: agent.PauseConfirmation},
		{Call: plain, Kind: agent.PauseConfirmation},
	}
	resp := func(id, name string, r map[string]any) *genai.Part {
		return &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: id, Name: name, Response: r}}
	}
	msg := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
		resp("cred-0", event.FunctionRequestCredential, secret),
		resp("conf-1", event.FunctionRequestConfirmation, map[string]any{"confirmed": true, "payload": secret}),
		resp("conf-2", event.FunctionRequestConfirmation, map[string]any{"response": map[string]any{"confirmed": true}, "payload": secret, "extra": secret}),
		resp("conf-3", event.FunctionRequestConfirmation, map[string]any{"confirmed": true, "payload": map[string]any{"result": "yes"}}),
		resp("conf-4", event.FunctionRequestConfirmation, map[string]any{"confirmed": false, "payload": map[string]any{"why": "no"}}),
	}}
	stored, creds := agent.TakeCredentials(calls, msg)
	want := []string{
		"map[status:credential received]",
		"map[confirmed:true]",
		"map[confirmed:true]",
		"map[confirmed:true payload:map[result:yes]]",
		"map[confirmed:false payload:map[why:no]]",
	}
	for i, p := range stored.Parts {
		if got := fmt.Sprint(p.FunctionResponse.Response); got != want[i] {
			t.Errorf("stored answer %s = %s, want %s", p.FunctionResponse.ID, got, want[i])
		}
	}
	if len(creds) != 3 || fmt.Sprint(creds["cred-0"]) != fmt.Sprint(secret) ||
		fmt.Sprint(creds["conf-1"]["payload"]) != fmt.Sprint(secret) || fmt.Sprint(creds["conf-2"]["payload"]) != fmt.Sprint(secret) {
		t.Errorf("answers kept in memory: %v", creds)
	}
	if fmt.Sprint(msg.Parts[1].FunctionResponse.Response["payload"]) != fmt.Sprint(secret) {
		t.Error("TakeCredentials modified the client's message")
	}

	// The owner of the relaying request gets the client's answer, payload
	// included; the log holds the approval alone.
	ctx := context.Background()
	svc := memsession.NewService()
	sess, err := svc.Create(ctx, session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := event.New("e-1", "helper_agent")
	req.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: relay}}}
	req.LongRunningToolIDs = []string{relay.ID}
	if err := svc.AppendEvent(ctx, sess, req); err != nil {
		t.Fatal(err)
	}
	reply := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{msg.Parts[1]}}
	pcs, err := agent.Pending(sess, reply)
	if err != nil {
		t.Fatal(err)
	}
	reply, creds = agent.TakeCredentials(pcs, reply)
	ans := event.New("e-1", event.AuthorUser)
	ans.Content = reply
	if err := svc.AppendEvent(ctx, sess, ans); err != nil {
		t.Fatal(err)
	}
	inv := agent.NewInvocation(agent.InvocationConfig{ID: "e-1", Session: sess, Credentials: creds})
	inv.DeliverAnswers(0)
	if got := fmt.Sprint(sess.At(1).FunctionResponses()[0].Response); got != "map[confirmed:true]" {
		t.Errorf("the log holds %s", got)
	}
	delivered := inv.For(&ptrAgent{name: "helper_agent"}).Answers()
	if len(delivered) != 1 || fmt.Sprint(agent.ParseConfirmation(delivered[0].Response.Response).Payload) != fmt.Sprint(secret) {
		t.Errorf("delivered %+v, want the approval with its payload", delivered)
	}
}

func ExampleTakeCredentials() {
	// An agent tool's request: its paused child waits for a credential.
	request := &genai.FunctionCall{ID: "r1", Name: event.FunctionRequestConfirmation, Args: map[string]any{
		"toolConfirmation": map[string]any{"payload": map[string]any{agent.ChildPauseKey: map[string]any{
			"waiting": []any{map[string]any{"id": "c1", "name": event.FunctionRequestCredential}},
		}}},
	}}
	fmt.Println(agent.AsksCredential(request), agent.RelayedCall(request).Name)

	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: "r1", Name: event.FunctionRequestConfirmation,
		Response: map[string]any{"confirmed": true, "payload": map[string]any{"authCode": "the-code"}},
	}}}}
	stored, kept := agent.TakeCredentials([]agent.PendingCall{{Call: request, Kind: agent.PauseConfirmation}}, answer)
	fmt.Println(stored.Parts[0].FunctionResponse.Response)
	fmt.Println(kept["r1"]["payload"])
	// Output:
	// true adk_request_credential
	// map[confirmed:true]
	// map[authCode:the-code]
}
