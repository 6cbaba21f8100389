package cli_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/examples/assistant"
)

// TestAPITracesWithoutUser: "loom api" on its default loopback address
// answers the trace routes as ADK's web UI calls them, without a user:
// the session's spans and an event's span.
func TestAPITracesWithoutUser(t *testing.T) {
	base := startServer(t, "api", cli.App{Name: "assistant", New: assistant.New, Offline: assistant.Offline})
	res, err := http.Post(base+"/apps/assistant/users/user/sessions/s1", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	res, err = http.Post(base+"/run", "application/json", strings.NewReader(
		`{"appName":"assistant","userId":"user","sessionId":"s1","newMessage":{"role":"user","parts":[{"text":"What's the weather in Porto?"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	var evs []struct{ ID string }
	if err := json.NewDecoder(res.Body).Decode(&evs); err != nil || res.StatusCode != http.StatusOK || len(evs) == 0 {
		t.Fatalf("run: %d, %d events, %v", res.StatusCode, len(evs), err)
	}
	res.Body.Close()
	res, err = http.Get(base + "/dev/apps/assistant/debug/trace/session/s1")
	if err != nil {
		t.Fatal(err)
	}
	var spans []struct{ Name string }
	if err := json.NewDecoder(res.Body).Decode(&spans); err != nil || len(spans) == 0 {
		t.Errorf("session trace without a user: %d spans, %v", len(spans), err)
	}
	res.Body.Close()
	res, err = http.Get(base + "/debug/trace/" + evs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("event trace without a user: %d", res.StatusCode)
	}
}
