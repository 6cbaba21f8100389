package assistant_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/memartifact"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/examples/assistant"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

func newRunner(t testing.TB) *runner.Runner {
	t.Helper()
	ag, err := assistant.New(assistant.Offline())
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{
		AppName:           "assistant",
		Agent:             ag,
		Sessions:          memsession.NewService(),
		Artifacts:         memartifact.NewService(),
		AutoCreateSession: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func finalText(events []*event.Event) string {
	var last string
	for _, ev := range events {
		if ev.IsFinalResponse() && ev.Content != nil {
			var b strings.Builder
			for _, p := range ev.Content.Parts {
				b.WriteString(p.Text)
			}
			last = b.String()
		}
	}
	return last
}

func TestWeatherToolRoundTrip(t *testing.T) {
	r := newRunner(t)
	ctx := context.Background()
	for _, streaming := range []bool{false, true} {
		events, err := r.RunSync(ctx, "u", fmt.Sprint("s", streaming), genai.NewContentFromText("What's the weather in Lisbon?", genai.RoleUser), &runner.RunOptions{Streaming: streaming})
		if err != nil {
			t.Fatal(err)
		}
		var calls, responses int
		for _, ev := range events {
			if ev.Partial {
				continue
			}
			for _, fc := range ev.FunctionCalls() {
				calls++
				if fc.Name != "get_weather" || fc.Args["city"] != "Lisbon" {
					t.Errorf("call = %s(%v), want get_weather(city: Lisbon)", fc.Name, fc.Args)
				}
			}
			responses += len(ev.FunctionResponses())
		}
		if calls != 1 || responses != 1 {
			t.Errorf("streaming=%v: %d calls and %d responses, want 1 and 1", streaming, calls, responses)
		}
		w := assistant.Forecast("Lisbon")
		want := fmt.Sprintf("It is %d°C and %s in Lisbon.", w.TemperatureC, w.Conditions)
		if got := finalText(events); got != want {
			t.Errorf("streaming=%v: answer = %q, want %q", streaming, got, want)
		}
		sess, err := r.Sessions().Get(ctx, session.Key{AppName: "assistant", UserID: "u", SessionID: fmt.Sprint("s", streaming)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if v := sess.State()["last_city"]; v != "Lisbon" {
			t.Errorf("state last_city = %v, want Lisbon", v)
		}
		if sess.Len() != 4 {
			t.Errorf("session has %d events, want 4 (user, call, response, answer)", sess.Len())
		}
	}
}

func TestAddAndNote(t *testing.T) {
	r := newRunner(t)
	ctx := context.Background()
	events, err := r.RunSync(ctx, "u", "s", genai.NewContentFromText("please add 2 and 3.5", genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := finalText(events); got != "The sum is 5.5." {
		t.Errorf("answer = %q", got)
	}
	events, err = r.RunSync(ctx, "u", "s", genai.NewContentFromText("save a note: buy milk", genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := finalText(events); got != "Saved your note as note.txt (version 0)." {
		t.Errorf("answer = %q", got)
	}
	part, err := r.Artifacts().Load(ctx, artifact.Ref{AppName: "assistant", UserID: "u", SessionID: "s", Name: "note.txt"}, artifact.Latest)
	if err != nil {
		t.Fatal(err)
	}
	if part.InlineData == nil || string(part.InlineData.Data) != "buy milk" {
		t.Errorf("artifact = %+v, want the note text", part)
	}
}

func TestSmallTalk(t *testing.T) {
	r := newRunner(t)
	events, err := r.RunSync(context.Background(), "u", "s", genai.NewContentFromText("hello", genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || !strings.HasPrefix(finalText(events), "Hello!") {
		t.Errorf("events = %d, answer %q", len(events), finalText(events))
	}
}

// The assistant answers a weather question by calling its tool, offline.
func Example() {
	ctx := context.Background()
	ag, err := assistant.New(assistant.Offline())
	if err != nil {
		panic(err)
	}
	r, err := runner.New(runner.Config{AppName: "demo", Agent: ag, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		panic(err)
	}
	msg := genai.NewContentFromText("What's the weather in Paris?", genai.RoleUser)
	for ev, err := range r.Run(ctx, "user", "s1", msg, nil) {
		if err != nil {
			panic(err)
		}
		for _, fc := range ev.FunctionCalls() {
			fmt.Printf("%s calls %s(%v)\n", ev.Author, fc.Name, fc.Args["city"])
		}
		for _, fr := range ev.FunctionResponses() {
			fmt.Printf("%s returns %v\n", fr.Name, fr.Response["conditions"])
		}
		if ev.IsFinalResponse() {
			fmt.Println(ev.Content.Parts[0].Text)
		}
	}
	// Output:
	// assistant calls get_weather(Paris)
	// get_weather returns rainy
	// It is 8°C and rainy in Paris.
}

// TestEmailNeedsApproval drives the approval flow end to end through the
// runner, offline: "email ..." makes the model call send_email, which
// requires confirmation, so the run pauses on adk_request_confirmation
// without sending; an approval runs the tool once and the model reports it,
// a rejection does not run it.
func TestEmailNeedsApproval(t *testing.T) {
	ctx := context.Background()
	for _, approve := range []bool{true, false} {
		r := newRunner(t)
		sid := fmt.Sprint("approve-", approve)
		events, err := r.RunSync(ctx, "u", sid, genai.NewContentFromText("email bob@example.com: lunch at noon", genai.RoleUser), nil)
		if err != nil {
			t.Fatal(err)
		}
		var request *genai.FunctionCall
		for _, ev := range events {
			for _, fc := range ev.FunctionCalls() {
				if fc.Name == "adk_request_confirmation" && slices.Contains(ev.LongRunningToolIDs, fc.ID) {
					request = fc
				}
			}
			for _, fr := range ev.FunctionResponses() {
				// Before approval the call is answered only by the
				// pending error.
				if fr.Name == "send_email" && fr.Response["error"] != llmagent.PendingConfirmationMessage {
					t.Fatalf("send_email ran before approval: %v", fr.Response)
				}
			}
		}
		if request == nil {
			t.Fatalf("no confirmation request among %d events", len(events))
		}
		orig, _ := request.Args["originalFunctionCall"].(map[string]any)
		args, _ := orig["args"].(map[string]any)
		if orig["name"] != "send_email" || args["to"] != "bob@example.com" || args["text"] != "lunch at noon" {
			t.Errorf("confirmation asks about %v", orig)
		}

		answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
			ID: request.ID, Name: "adk_request_confirmation", Response: map[string]any{"confirmed": approve},
		}}}}
		events, err = r.RunSync(ctx, "u", sid, answer, nil)
		if err != nil {
			t.Fatal(err)
		}
		var sent []map[string]any
		for _, ev := range events {
			for _, fr := range ev.FunctionResponses() {
				if fr.Name == "send_email" {
					sent = append(sent, fr.Response)
				}
			}
		}
		sess, err := r.Sessions().Get(ctx, session.Key{AppName: "assistant", UserID: "u", SessionID: sid}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if approve {
			if len(sent) != 1 || sent[0]["status"] != "sent" {
				t.Errorf("approved: send_email responses %v, want one sent", sent)
			}
			if got := finalText(events); got != "Sent the email to bob@example.com." {
				t.Errorf("approved: answer %q", got)
			}
			if sess.State()["last_email_to"] != "bob@example.com" {
				t.Errorf("approved: state %v", sess.State())
			}
		} else {
			if len(sent) != 1 || sent[0]["status"] == "sent" {
				t.Errorf("rejected: send_email responses %v, want one rejection", sent)
			}
			if got := finalText(events); got != "OK, I did not send the email." {
				t.Errorf("rejected: answer %q", got)
			}
			if _, ok := sess.State()["last_email_to"]; ok {
				t.Errorf("rejected: the tool ran: state %v", sess.State())
			}
		}
	}
}
