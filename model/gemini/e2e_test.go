package gemini_test

import (
	"strings"
	"testing"

	"github.com/loomkit/loom/model/internal/fakeapi"
)

// TestRunnerEndToEnd runs call → tool → answer through the runner against
// the fake Gemini server, with and without streaming.
func TestRunnerEndToEnd(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		calls, answer := fakeapi.File(t, 200, "testdata/calls.json", false), fakeapi.File(t, 200, "testdata/text.json", false)
		if streaming {
			calls, answer = fakeapi.File(t, 200, "testdata/stream_calls.sse", true), fakeapi.File(t, 200, "testdata/stream_text.sse", true)
		}
		srv := fakeapi.Start(t, calls, answer)
		if got := fakeapi.RunWeather(t, newModel(t, srv, nil), streaming); got != "It is sunny in Paris." {
			t.Errorf("streaming=%v: answer = %q", streaming, got)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("streaming=%v: got %d model calls, want 2", streaming, len(reqs))
		}
		second := string(reqs[1].Body)
		for _, want := range []string{`"functionResponse"`, `sunny`, `rain`, `"systemInstruction"`} {
			if !strings.Contains(second, want) {
				t.Errorf("streaming=%v: second request lacks %s: %s", streaming, want, second)
			}
		}
	}
}
