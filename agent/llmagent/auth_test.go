package llmagent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/tool"
)

// TestAuthRequestFlow checks the credential flow: a tool asks for
// credentials, the runtime asks the client with adk_request_credential and
// pauses, the client answers, the tool runs with the credential, and the
// secret never reaches the session log (CONFORMANCE T9).
func TestAuthRequestFlow(t *testing.T) {
	const secret = "s3cr3t-api-key-value"
	var got string
	runs := 0
	fetch := fnTool{name: "fetch_private", run: func(ctx context.Context, tc tool.Context, args map[string]any) (map[string]any, error) {
		cred := tc.Credential()
		if cred == nil {
			tc.RequestCredential(map[string]any{"authScheme": map[string]any{"type": "apiKey", "in": "header", "name": "X-Key"}})
			return nil, nil
		}
		runs++
		got, _ = cred["apiKey"].(string)
		return map[string]any{"data": "private report"}, nil
	}}
	m := scripted.NewSequence("m", scripted.Call("fetch_private", nil), scripted.Text("Here is your report."))
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{fetch}}), nil, nil)
	evs := f.run(t, "get my report", nil)
	last := evs[len(evs)-1]
	calls := last.FunctionCalls()
	if len(calls) != 1 || calls[0].Name != event.FunctionRequestCredential || last.LongRunningToolIDs[0] != calls[0].ID {
		t.Fatalf("want a long-running adk_request_credential call, got %+v", last.Content)
	}
	if cfg, _ := calls[0].Args["authConfig"].(map[string]any); cfg["authScheme"] == nil || runs != 0 {
		t.Fatalf("auth config %v, runs %d", calls[0].Args, runs)
	}
	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: calls[0].ID, Name: event.FunctionRequestCredential, Response: map[string]any{"apiKey": secret}}}}}
	evs, err := f.r.RunSync(context.Background(), user, sid, answer, nil)
	if err != nil {
		t.Fatal(err)
	}
	if runs != 1 || got != secret {
		t.Fatalf("tool ran %d times with credential %q", runs, got)
	}
	if evs[len(evs)-1].Text() != "Here is your report." {
		t.Fatalf("model did not continue: %q", evs[len(evs)-1].Text())
	}
	for _, e := range f.session(t).Events() {
		b, _ := json.Marshal(e)
		if strings.Contains(string(b), secret) {
			t.Fatalf("the credential was written to the log: %s", b)
		}
	}
	for _, req := range m.Requests() {
		b, _ := json.Marshal(req.Contents)
		if strings.Contains(string(b), secret) || strings.Contains(string(b), event.FunctionRequestCredential) {
			t.Fatalf("credential request or secret reached the model: %s", b)
		}
	}
}
