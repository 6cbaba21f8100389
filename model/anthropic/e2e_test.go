package anthropic_test

import (
	"strings"
	"testing"

	"github.com/loomkit/loom/model/internal/fakeapi"
)

// TestRunnerEndToEnd runs call → tool → answer through the runner against
// the fake Messages server, with and without streaming. The thinking block
// of the tool turn goes back with its signature.
func TestRunnerEndToEnd(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		calls, answer := fakeapi.File(t, 200, "testdata/tool_use.json", false), fakeapi.File(t, 200, "testdata/text.json", false)
		if streaming {
			calls, answer = fakeapi.File(t, 200, "testdata/stream_tools.sse", true), fakeapi.File(t, 200, "testdata/stream_text.sse", true)
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
		for _, want := range []string{`"tool_use_id":"toolu_a"`, `"tool_use_id":"toolu_b"`, `sunny`, `rain`, `"signature":"sig-abc"`, `"system":[`} {
			if !strings.Contains(second, want) {
				t.Errorf("streaming=%v: second request lacks %s: %s", streaming, want, second)
			}
		}
	}
}
