package remoteagent_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent/remoteagent"
)

// A streamed answer larger than 64 KiB (a long text, a file sent as
// bytes) arrives whole: an SSE event is not limited to a line scanner's
// default buffer.
func TestLargeStreamedAnswer(t *testing.T) {
	long := strings.Repeat("All work and no play. ", 10000) // 220 KB
	base := fakeServer(t, true, func(w http.ResponseWriter, id string) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"kind":"artifact-update","taskId":"t1","contextId":"c1","artifact":{"artifactId":"a","parts":[{"kind":"text","text":"`+long+`"}]}}}`+"\n\n")
		fmt.Fprint(w, `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"kind":"status-update","taskId":"t1","contextId":"c1","final":true,"status":{"state":"completed"}}}`+"\n\n")
	})
	r := newRunner(t, newRemote(t, "fake", base))
	evs, _ := turn(t, r, "s", user("hello"))
	if len(evs) != 1 || evs[0].ErrorCode != "" || text(evs) != long+"\n" {
		msg := ""
		if len(evs) > 0 {
			msg = evs[0].ErrorCode + " " + evs[0].ErrorMessage
		}
		t.Fatalf("%d events (%s), %d bytes of text; want the whole answer", len(evs), msg, len(text(evs)))
	}
}

// An SSE event beyond the bound is a clear error event, not an answer cut
// short or a stream read without end.
func TestOversizedStreamedEventIsErrorEvent(t *testing.T) {
	base := fakeServer(t, true, func(w http.ResponseWriter, id string) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"kind":"artifact-update","taskId":"t1","contextId":"c1","artifact":{"artifactId":"a","parts":[{"kind":"text","text":"`)
		chunk := strings.Repeat("x", 1<<20)
		for range remoteagent.MaxEventBytes>>20 + 2 {
			if _, err := fmt.Fprint(w, chunk); err != nil {
				return
			}
		}
		fmt.Fprint(w, `"}]}}}`+"\n\n")
	})
	r := newRunner(t, newRemote(t, "fake", base))
	evs, _ := turn(t, r, "s", user("hello"))
	if len(evs) != 1 || evs[0].ErrorCode != remoteagent.ErrorRequest || !strings.Contains(evs[0].ErrorMessage, "too large") {
		t.Fatalf("events %d, want one %s error event saying the event is too large", len(evs), remoteagent.ErrorRequest)
	}
}
