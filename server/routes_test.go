package server_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/server"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestRoutesGolden walks every route of WIRE.md's HTTP table, in an order
// that builds on earlier steps, and compares status, content type and
// normalized body with testdata/routes.golden. Run with -update to rewrite
// the file after an intended change. Covers CONFORMANCE S4 (409 on an existing id) and
// R2 (404 on a run in a missing session).
func TestRoutesGolden(t *testing.T) {
	f := newFixture(t, server.Config{Version: "1.2.3"})
	const (
		sessions = "/apps/demo/users/u1/sessions"
		s1       = sessions + "/s1"
		arts     = s1 + "/artifacts"
	)
	steps := []struct{ method, path, body string }{
		{"GET", "/health", ""},
		{"GET", "/version", ""},
		{"GET", "/list-apps", ""},
		{"GET", "/list-apps?detailed=true", ""},
		{"GET", "/apps/demo/app-info", ""},
		{"GET", "/apps/nope/app-info", ""},
		{"GET", "/config/telemetry", ""},

		// Sessions: both create forms, listing, reading, patching, deleting.
		{"POST", sessions, `{"sessionId":"s1","state":{"__session_metadata__":{"displayName":"First"},"user:lang":"fr","snake_key":1}}`},
		{"POST", sessions, `{"sessionId":"s1"}`},
		{"POST", "/apps/demo/users/u2/sessions", ``},
		{"POST", "/apps/demo/users/u2/sessions", `{"session_id":null,"state":null}`},
		{"POST", sessions + "/s2", `{"visit_count":5}`},
		{"POST", sessions + "/s9", `[1,2]`},
		{"POST", sessions, `{"session_id":"s3","events":[{"invocation_id":"e-imported","author":"user","content":{"role":"user","parts":[{"text":"earlier"}]},"actions":{"state_delta":{"seen_key":true}},"timestamp":1700000000.5}]}`},
		{"POST", sessions, `{"sessionId":`},
		{"POST", "/apps/nope/users/u1/sessions", ``},
		{"GET", sessions, ""},
		{"GET", s1, ""},
		{"GET", sessions + "/missing", ""},
		{"PATCH", s1, `{"stateDelta":{"color":"blue","temp:scratch":1}}`},
		{"PATCH", s1, `{"stateDelta":null}`},
		{"PATCH", sessions + "/missing", `{"state_delta":{"a":1}}`},
		{"PATCH", s1, `{"stateDelta":"nope"}`},

		// Runs.
		{"POST", "/run", runBody("s1", "hello", false)},
		{"POST", "/run", `{"app_name":"demo","user_id":"u1","session_id":"s1","new_message":{"role":"user","parts":[{"text":"snake"}]},"state_delta":null,"invocation_id":null}`},
		{"POST", "/run", `{"appName":"demo","userId":"u1","sessionId":"s1","newMessage":{"parts":[{"text":"with delta"}]},"stateDelta":{"mood":"good"}}`},
		{"POST", "/run", runBody("missing", "hello", false)},
		{"POST", "/run", `{"appName":"nope","userId":"u1","sessionId":"s1","newMessage":{"parts":[{"text":"x"}]}}`},
		{"POST", "/run", `{"appName":`},
		{"POST", "/run", `{"appName":"demo","userId":"u1","sessionId":"s1"}`},
		{"POST", "/run", `{"appName":"demo","userId":"u1","sessionId":"s1","newMessage":{"parts":[]}}`},
		{"POST", "/run", `{"appName":"demo","userId":"u1","sessionId":"s1","newMessage":{"parts":[{"text":"fail"}]}}`},
		{"POST", "/run_sse", runBody("s1", "hello", false)},
		{"POST", "/run_sse", runBody("s1", "hello", true)},
		{"POST", "/run_sse", runBody("s1", "artifact", false)},
		{"POST", "/run_sse", runBody("s1", "fail", true)},
		{"POST", "/run_sse", runBody("missing", "hello", true)},

		// Artifacts: report.txt was saved by the "artifact" run above.
		{"GET", arts, ""},
		{"GET", arts + "/report.txt", ""},
		{"GET", arts + "/report.txt?version=0", ""},
		{"GET", arts + "/report.txt/versions", ""},
		{"GET", arts + "/report.txt/versions/0", ""},
		{"GET", arts + "/report.txt/versions/7", ""},
		{"GET", arts + "/report.txt/versions/x", ""},
		{"GET", arts + "/other.txt/versions", ""},
		{"DELETE", arts + "/report.txt", ""},
		{"GET", arts + "/report.txt", ""},
		{"GET", arts, ""},

		// Traces, cancel, deletion, unknown routes.
		{"GET", "/dev/apps/demo/debug/trace/session/s1", ""},
		{"GET", "/dev/apps/demo/debug/trace/some-event", ""},
		{"GET", "/dev/apps/nope/debug/trace/session/s1", ""},
		{"GET", "/debug/trace/session/s1", ""},
		{"GET", "/debug/trace/some-event", ""},
		{"POST", s1 + "/cancel", ""},
		{"GET", s1, ""},
		{"DELETE", sessions + "/s2", ""},
		{"GET", sessions + "/s2", ""},
		{"GET", "/nope", ""},
		{"DELETE", "/health", ""},
	}
	var out strings.Builder
	for _, st := range steps {
		w := f.do(t, st.method, st.path, st.body)
		ct := w.Header().Get("Content-Type")
		fmt.Fprintf(&out, "### %s %s\n", st.method, st.path)
		if st.body != "" {
			fmt.Fprintf(&out, "> %s\n", st.body)
		}
		fmt.Fprintf(&out, "%d %s\n", w.Code, ct)
		switch {
		case strings.HasPrefix(ct, "text/event-stream"):
			for _, fr := range sseFrames(w.Body.String()) {
				if data, ok := strings.CutPrefix(fr, "data: "); ok {
					fr = "data: " + normalizeJSON(t, []byte(data), false)
				}
				out.WriteString(fr + "\n\n")
			}
		case w.Body.Len() > 0:
			out.WriteString(normalizeJSON(t, w.Body.Bytes(), true) + "\n")
		}
		out.WriteString("\n")
	}
	golden := filepath.Join("testdata", "routes.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got := out.String(); got != string(want) {
		t.Errorf("responses differ from %s (run with -update after checking the change):\n%s", golden, lineDiff(string(want), got))
	}
}

// lineDiff reports the first lines where want and got differ.
func lineDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	n := 0
	for i := 0; i < max(len(wl), len(gl)) && n < 20; i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i+1, w, g)
			n++
		}
	}
	return b.String()
}
