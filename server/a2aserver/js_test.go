package a2aserver_test

// A Loom A2A server driven by the A2A JavaScript SDK's client (a v1.0
// client speaking the 0.3 protocol through its compatibility layer).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/server/a2aserver"
	"github.com/loomkit/loom/session"
)

type jsStep struct {
	Step        string           `json:"step"`
	ID          string           `json:"id"`
	ContextID   string           `json:"contextId"`
	State       string           `json:"state"`
	Text        string           `json:"text"`
	Name        string           `json:"name"`
	Streaming   bool             `json:"streaming"`
	Skills      []string         `json:"skills"`
	Transport   string           `json:"transport"`
	Kinds       []string         `json:"kinds"`
	States      []string         `json:"states"`
	Calls       []map[string]any `json:"calls"`
	CancelState string           `json:"cancelState"`
	Stream      []string         `json:"streamStates"`
	Error       string           `json:"error"`
}

func TestJSClient(t *testing.T) {
	modules := a2aJS(t)
	r := newRunner(t)
	_, base := serve(t, r)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "testdata/js/client.cjs", modules, base)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client: %v\n%s\n%s", err, out, stderr.String())
	}
	steps := map[string]jsStep{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var s jsStep
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("client output %q: %v", sc.Text(), err)
		}
		steps[s.Step] = s
	}
	for _, want := range []string{"card", "send", "stream", "get", "paused", "resumed", "cancel", "error"} {
		if _, ok := steps[want]; !ok {
			t.Fatalf("client printed no %q step; output:\n%s\nstderr:\n%s", want, out, stderr.String())
		}
	}

	card := steps["card"]
	if card.Name != "assistant" || !card.Streaming || !strings.Contains(card.Transport, "LegacyJsonRpcTransport") {
		t.Errorf("card = %+v, want the assistant, streaming, over the 0.3 JSON-RPC transport", card)
	}
	for _, skill := range []string{"assistant", "assistant.get_weather", "assistant.send_email", "assistant.slow_job"} {
		if !slices.Contains(card.Skills, skill) {
			t.Errorf("card skills %v lack %q", card.Skills, skill)
		}
	}

	send := steps["send"]
	if send.State != "completed" || !strings.Contains(send.Text, "Paris") {
		t.Errorf("message/send = %+v, want a completed task whose artifact answers about Paris", send)
	}
	// The context is a Loom session holding the turn.
	sess, err := r.Sessions().Get(context.Background(), session.Key{AppName: r.AppName(), UserID: a2aserver.UserPrefix + send.ContextID, SessionID: send.ContextID}, nil)
	if err != nil {
		t.Fatalf("the session of context %s: %v", send.ContextID, err)
	}
	if sess.Len() < 4 { // user, call, response, answer
		t.Errorf("session has %d events after message/send, want at least 4", sess.Len())
	}

	stream := steps["stream"]
	if len(stream.Kinds) == 0 || stream.Kinds[0] != "task" || !slices.Contains(stream.Kinds, "artifactUpdate") {
		t.Errorf("message/stream kinds = %v, want a task first and an artifact update", stream.Kinds)
	}
	if len(stream.States) == 0 || stream.States[len(stream.States)-1] != "completed" || !slices.Contains(stream.States, "working") {
		t.Errorf("message/stream states = %v, want working ... completed", stream.States)
	}
	if !strings.Contains(stream.Text, "Rome") {
		t.Errorf("message/stream artifact text = %q, want the answer about Rome", stream.Text)
	}
	// Both turns are in the same session.
	sess, err = r.Sessions().Get(context.Background(), session.Key{AppName: r.AppName(), UserID: a2aserver.UserPrefix + send.ContextID, SessionID: send.ContextID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sess.Len() < 8 {
		t.Errorf("session has %d events after two turns, want at least 8", sess.Len())
	}

	get := steps["get"]
	if get.ID != send.ID || get.State != "completed" || get.Text != send.Text {
		t.Errorf("tasks/get = %+v, want the task of message/send %+v", get, send)
	}

	paused := steps["paused"]
	if paused.State != "input-required" {
		t.Errorf("confirmation task state = %q, want input-required", paused.State)
	}
	var confirm bool
	for _, c := range paused.Calls {
		md, _ := c["metadata"].(map[string]any)
		data, _ := c["data"].(map[string]any)
		if data["name"] == "adk_request_confirmation" && md["adk_type"] == "function_call" && md["adk_is_long_running"] == true {
			confirm = true
		}
	}
	if !confirm {
		t.Errorf("input-required status message parts = %v, want the adk_request_confirmation call", paused.Calls)
	}
	resumed := steps["resumed"]
	if resumed.ID != paused.ID || resumed.State != "completed" || !strings.Contains(resumed.Text, "bob@example.com") {
		t.Errorf("resumed task = %+v, want task %s completed with the email sent to bob@example.com", resumed, paused.ID)
	}

	cancelled := steps["cancel"]
	if cancelled.CancelState != "canceled" || cancelled.State != "canceled" {
		t.Errorf("tasks/cancel = %+v, want the task canceled", cancelled)
	}
	if len(cancelled.Stream) == 0 || cancelled.Stream[len(cancelled.Stream)-1] != "canceled" {
		t.Errorf("the cancelled task's stream states = %v, want it to end canceled", cancelled.Stream)
	}

	if !strings.Contains(strings.ToLower(steps["error"].Error), "not found") {
		t.Errorf("tasks/get of an unknown task: error %q, want a task-not-found error", steps["error"].Error)
	}
}
