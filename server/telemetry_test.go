package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/plugin/telemetry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session/memsession"
)

// tracedServer serves one app whose runner records spans with a telemetry
// plugin, its trace routes answered by server.TelemetryTraces; ann has run
// one invocation in session s1. The caller closes it.
func tracedServer() (*httptest.Server, error) {
	greeter, _ := agent.New(agent.Config{
		Name: "greeter",
		Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
			return func(yield func(*event.Event, error) bool) {
				ev := inv.NewEvent()
				ev.Content = genai.NewContentFromText("hello", genai.RoleModel)
				yield(ev, nil)
			}
		},
	})
	tel, err := telemetry.New(telemetry.Config{})
	if err != nil {
		return nil, err
	}
	app, _ := runner.New(runner.Config{AppName: "app", Agent: greeter, Sessions: memsession.NewService(),
		Plugins: []*plugin.Plugin{tel.Plugin()}})
	if _, err := app.CreateSession(context.Background(), "ann", "s1", nil, nil); err != nil {
		return nil, err
	}
	if _, err := app.RunSync(context.Background(), "ann", "s1", genai.NewContentFromText("hi", genai.RoleUser), nil); err != nil {
		return nil, err
	}
	srv, err := server.New(server.Config{Apps: []*runner.Runner{app}, Traces: server.TelemetryTraces(tel)})
	if err != nil {
		return nil, err
	}
	return httptest.NewServer(srv), nil
}

// spanNames returns the names of the spans a trace route lists.
func spanNames(url string) ([]string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var spans []server.Span
	if err := json.NewDecoder(resp.Body).Decode(&spans); err != nil {
		return nil, err
	}
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	return names, nil
}

// TestTelemetryTracesAnswerOnlyTheOwner: the trace routes answered from a
// telemetry plugin list the session's spans to its user, and nothing to
// another user.
func TestTelemetryTracesAnswerOnlyTheOwner(t *testing.T) {
	ts, err := tracedServer()
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	own, err := spanNames(ts.URL + "/dev/apps/app/debug/trace/session/s1?user_id=ann")
	if err != nil || !slices.Contains(own, "invocation") {
		t.Errorf("ann's spans = %v (%v), want the invocation's", own, err)
	}
	other, err := spanNames(ts.URL + "/dev/apps/app/debug/trace/session/s1?user_id=bob")
	if err != nil || len(other) != 0 {
		t.Errorf("bob reads ann's spans: %v (%v)", other, err)
	}
}

// The debug trace routes of a server answered from the telemetry plugin's
// in-memory spans.
func ExampleTelemetryTraces() {
	ts, err := tracedServer()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ts.Close()
	names, err := spanNames(ts.URL + "/dev/apps/app/debug/trace/session/s1?user_id=ann")
	fmt.Println(slices.Contains(names, "invocation"), err)
	// Output: true <nil>
}
