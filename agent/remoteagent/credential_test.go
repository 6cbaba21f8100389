package remoteagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server/a2aserver"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// A remote agent whose tool asks for a credential: the client's answer
// reaches the remote as the client sent it, and neither side's session
// log keeps it.
//
// (CONFORMANCE T17)
func TestT17RemoteCredentialRequest(t *testing.T) {
	const secret = "k-remote-5521"
	fetch, err := functiontool.New(functiontool.Config{Name: "fetch_report", Description: "Fetches a private report."},
		func(_ context.Context, tc tool.Context, _ struct{}) (map[string]any, error) {
			cred := tc.Credential()
			if cred == nil {
				tc.RequestCredential(map[string]any{"authScheme": map[string]any{"type": "apiKey", "in": "header", "name": "X-Key"}})
				return nil, nil
			}
			return map[string]any{"key_ok": cred["apiKey"] == secret}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	root, err := llmagent.New(llmagent.Config{Name: "reporter", Tools: []tool.Tool{fetch},
		Model: scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
			if frs := scripted.LastFunctionResponse(req); len(frs) > 0 {
				return scripted.Text(fmt.Sprintf("key ok: %v", frs[0].Response["key_ok"])), nil
			}
			return scripted.Call("fetch_report", map[string]any{}), nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	servedSessions := session.NewService(memsession.New(), nil)
	served, err := runner.New(runner.Config{AppName: "reporter", Agent: root, Sessions: servedSessions, AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := a2aserver.New(a2aserver.Config{Runner: served})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()

	r := newRunner(t, newRemote(t, "remote", srv.URL))
	evs, _ := turn(t, r, "s", user("my report"))
	fc := pausedCall(t, evs)
	if fc.Name != event.FunctionRequestCredential {
		t.Fatalf("the remote pauses on %s, want %s", fc.Name, event.FunctionRequestCredential)
	}
	evs, _ = turn(t, r, "s", answer(fc, map[string]any{"apiKey": secret}))
	if got := text(evs); !strings.Contains(got, "key ok: true") {
		t.Fatalf("after the credential: %q, want the remote's tool to have the key", got)
	}
	sess, err := r.Sessions().Get(context.Background(), session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range sess.Events() {
		if b, _ := json.Marshal(ev); strings.Contains(string(b), secret) {
			t.Errorf("the local session holds the credential: %s", b)
		}
	}
}
