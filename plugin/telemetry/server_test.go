package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/cost"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/plugin/telemetry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
)

// TestTraceRoutes serves a Telemetry through the server's debug trace
// routes (WIRE.md): a session's spans with ns times and parent ids, and an
// event's span attributes, under the /dev/apps and the older paths.
func TestTraceRoutes(t *testing.T) {
	f := newFixture(t, telemetry.Config{}, s1Agent(t, s1Model(1, 2)))
	srv, err := server.New(server.Config{Apps: []*runner.Runner{f.runner}, Traces: traceRoutes{f.tel}, AllowedHosts: []string{"example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	do := func(method, path, body string) *httptest.ResponseRecorder {
		t.Helper()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		return rec
	}
	do("POST", "/apps/app/users/u/sessions/s1", "{}")
	rec := do("POST", "/run", `{"appName":"app","userId":"u","sessionId":"s1","newMessage":{"role":"user","parts":[{"text":"1+2"}]}}`)
	var evs []*event.Event
	if err := json.Unmarshal(rec.Body.Bytes(), &evs); err != nil || len(evs) != 3 {
		t.Fatalf("run answered %d events, %v: %s", len(evs), err, rec.Body)
	}

	for _, path := range []string{"/dev/apps/app/debug/trace/session/s1?user_id=u", "/debug/trace/session/s1?user_id=u", "/debug/trace/session/s1?userId=u&app_name=app"} {
		var spans []map[string]any
		if err := json.Unmarshal(do("GET", path, "").Body.Bytes(), &spans); err != nil {
			t.Fatal(err)
		}
		if len(spans) != 5 {
			t.Fatalf("%s: %d spans", path, len(spans))
		}
		ids := map[any]bool{}
		for _, s := range spans {
			ids[s["span_id"]] = true
		}
		for _, s := range spans {
			start, _ := s["start_time"].(float64)
			end, _ := s["end_time"].(float64)
			if start < 1e18 || end < start { // ns since the epoch
				t.Errorf("%s: times %v..%v", s["name"], s["start_time"], s["end_time"])
			}
			if _, ok := s["attributes"].(map[string]any); !ok {
				t.Errorf("%s: attributes %v", s["name"], s["attributes"])
			}
			if p := s["parent_span_id"]; s["name"] != "invocation" && !ids[p] {
				t.Errorf("%s: parent %v not among the spans", s["name"], p)
			}
			if tid, _ := s["trace_id"].(string); len(tid) != 32 {
				t.Errorf("%s: trace id %q", s["name"], tid)
			}
		}
	}
	for _, path := range []string{"/dev/apps/app/debug/trace/" + evs[0].ID + "?user_id=u", "/debug/trace/" + evs[0].ID + "?user_id=u"} {
		var attrs map[string]any
		if err := json.Unmarshal(do("GET", path, "").Body.Bytes(), &attrs); err != nil {
			t.Fatal(err)
		}
		if attrs["gcp.vertex.agent.event_id"] != evs[0].ID || attrs["gen_ai.usage.input_tokens"] != float64(10) {
			t.Errorf("%s: %v", path, attrs)
		}
	}
}

// TestTraceRoutesAreScopedByOwner: two users run a session with the same
// id; each reads only the spans and event attributes of their own session,
// a request naming no user sees nothing (an empty list, or 404 for an
// event), and with Config.Authenticate the bound user is the one read for.
func TestTraceRoutesAreScopedByOwner(t *testing.T) {
	f := newFixture(t, telemetry.Config{}, s1Agent(t, s1Model(1, 2)))
	other, err := runner.New(runner.Config{AppName: "other", Agent: s1Agent(t, s1Model(3, 4)), Sessions: newSessions(),
		Plugins: []*plugin.Plugin{f.tel.Plugin()}, AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	runs := map[string][]*event.Event{}
	for _, who := range []struct {
		r    *runner.Runner
		user string
	}{{f.runner, "u"}, {f.runner, "v"}, {other, "u"}} {
		evs, err := who.r.RunSync(ctx, who.user, "s1", genai.NewContentFromText("1+2", genai.RoleUser), nil)
		if err != nil || len(evs) != 3 {
			t.Fatalf("run as %s: %d events, %v", who.user, len(evs), err)
		}
		runs[who.r.AppName()+"/"+who.user] = evs
	}
	auth := func(r *http.Request) (string, error) {
		user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return "", errors.New("no token")
		}
		return user, nil
	}
	for _, authed := range []bool{false, true} {
		cfg := server.Config{Apps: []*runner.Runner{f.runner, other}, Traces: traceRoutes{f.tel}, AllowedHosts: []string{"example.com"}}
		if authed {
			cfg.Authenticate = auth
		}
		srv, err := server.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		get := func(path, user string) (int, []byte) {
			t.Helper()
			req := httptest.NewRequest("GET", path, nil)
			if authed {
				req.Header.Set("Authorization", "Bearer "+user)
			} else if user != "" {
				sep := "?"
				if strings.Contains(path, "?") {
					sep = "&"
				}
				req.URL.RawQuery = strings.TrimPrefix(req.URL.RawQuery+sep+"user_id="+user, "?")
			}
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			return rec.Code, rec.Body.Bytes()
		}
		spansOf := func(path, user string) map[string]bool {
			t.Helper()
			code, body := get(path, user)
			var spans []server.Span
			if err := json.Unmarshal(body, &spans); code != http.StatusOK || err != nil {
				t.Fatalf("authed=%v %s as %q: %d %s", authed, path, user, code, body)
			}
			invs := map[string]bool{}
			for _, s := range spans {
				if id, ok := s.Attributes["gcp.vertex.agent.invocation_id"].(string); ok {
					invs[id] = true
				}
			}
			return invs
		}
		for key, evs := range runs {
			app, user, _ := strings.Cut(key, "/")
			for _, path := range []string{"/dev/apps/" + app + "/debug/trace/session/s1", "/debug/trace/session/s1?app_name=" + app} {
				invs := spansOf(path, user)
				if len(invs) != 1 || !invs[evs[0].InvocationID] {
					t.Errorf("authed=%v %s as %s: invocations %v, want only %s", authed, path, user, invs, evs[0].InvocationID)
				}
			}
			for _, path := range []string{"/dev/apps/" + app + "/debug/trace/" + evs[0].ID, "/debug/trace/" + evs[0].ID} {
				if code, body := get(path, user); code != http.StatusOK || !strings.Contains(string(body), evs[0].ID) {
					t.Errorf("authed=%v %s as owner %s: %d %s", authed, path, user, code, body)
				}
			}
		}
		// Another user's event is not found; neither is one asked for
		// under another app.
		uEvent := runs["app/u"][0].ID
		for _, tc := range []struct{ path, user string }{
			{"/debug/trace/" + uEvent, "v"},
			{"/dev/apps/app/debug/trace/" + uEvent, "v"},
			{"/dev/apps/other/debug/trace/" + uEvent, "u"},
		} {
			if code, body := get(tc.path, tc.user); code != http.StatusNotFound {
				t.Errorf("authed=%v %s as %s: %d %s, want 404", authed, tc.path, tc.user, code, body)
			}
		}
		if authed {
			// Naming another user than the bound one is refused.
			req := httptest.NewRequest("GET", "/debug/trace/session/s1?user_id=u", nil)
			req.Header.Set("Authorization", "Bearer v")
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			if rec.Code != http.StatusForbidden {
				t.Errorf("v asking for u's trace: %d %s", rec.Code, rec.Body)
			}
			continue
		}
		// Without a user (what ADK's web UI sends): nothing.
		if invs := spansOf("/debug/trace/session/s1", ""); len(invs) != 0 {
			t.Errorf("session trace without a user: %v", invs)
		}
		if code, _ := get("/debug/trace/"+uEvent, ""); code != http.StatusNotFound {
			t.Errorf("event trace without a user: %d", code)
		}
	}
}

// TestStreamingRun checks that a streamed model call still gets one
// call_llm span per call, with the id of the aggregated event.
func TestStreamingRun(t *testing.T) {
	f := newFixture(t, telemetry.Config{}, s1Agent(t, s1Model(1, 2)))
	var final *event.Event
	for ev, err := range f.runner.Run(context.Background(), "u", "s", genai.NewContentFromText("1+2", genai.RoleUser), &runner.RunOptions{Streaming: true}) {
		if err != nil {
			t.Fatal(err)
		}
		if !ev.Partial {
			final = ev
		}
	}
	spans, _ := f.tel.SessionSpans(context.Background(), own("s"))
	var llm int
	for _, s := range spans {
		if s.Name == "call_llm" {
			llm++
		}
	}
	if llm != 2 {
		t.Fatalf("%d call_llm spans among %v", llm, names(spans))
	}
	if attrs, _ := f.tel.EventAttributes(context.Background(), own(""), final.ID); attrs["gen_ai.operation.name"] != "generate_content" {
		t.Errorf("final event's span: %v", attrs)
	}
}

// BenchmarkS1Telemetry measures an S1 invocation with the telemetry plugin
// recording into its in-memory exporter; compare with BenchmarkS1Plain.
func BenchmarkS1Telemetry(b *testing.B) {
	f := newFixture(b, telemetry.Config{}, s1Agent(b, s1Model(1, 2)))
	benchS1(b, f.runner)
}

// BenchmarkS1TelemetryNoPayloads is BenchmarkS1Telemetry with payload
// recording off (Config.MaxPayloadBytes negative): spans and attributes
// only.
func BenchmarkS1TelemetryNoPayloads(b *testing.B) {
	f := newFixture(b, telemetry.Config{MaxPayloadBytes: -1}, s1Agent(b, s1Model(1, 2)))
	benchS1(b, f.runner)
}

// BenchmarkS1TelemetryPrices is BenchmarkS1TelemetryNoPayloads with the
// model priced, so that each response also records its cost.
func BenchmarkS1TelemetryPrices(b *testing.B) {
	f := newFixture(b, telemetry.Config{MaxPayloadBytes: -1, Prices: cost.Prices{"scripted-s1": {Input: 1, Output: 4}}}, s1Agent(b, s1Model(1, 2)))
	benchS1(b, f.runner)
}

// BenchmarkS1Plain is the same S1 invocation without telemetry.
func BenchmarkS1Plain(b *testing.B) {
	r, err := runner.New(runner.Config{AppName: "app", Agent: s1Agent(b, s1Model(1, 2)), Sessions: newSessions(), AutoCreateSession: true})
	if err != nil {
		b.Fatal(err)
	}
	benchS1(b, r)
}

func benchS1(b *testing.B, r *runner.Runner) {
	ctx := context.Background()
	msg := genai.NewContentFromText("1+2", genai.RoleUser)
	sessions := make([]string, 100)
	for i := range sessions {
		sessions[i] = "s" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := r.RunSync(ctx, "u", sessions[i%len(sessions)], msg, nil); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// traceRoutes serves a Telemetry's spans on the server's trace routes, as
// the cli package does.
type traceRoutes struct{ *telemetry.Telemetry }

func (t traceRoutes) SessionSpans(ctx context.Context, q server.TraceQuery) ([]server.Span, error) {
	spans, err := t.Telemetry.SessionSpans(ctx, telemetry.Owner(q))
	out := make([]server.Span, len(spans))
	for i, s := range spans {
		out[i] = server.Span(s)
	}
	return out, err
}

func (t traceRoutes) EventAttributes(ctx context.Context, q server.TraceQuery, eventID string) (map[string]any, error) {
	return t.Telemetry.EventAttributes(ctx, telemetry.Owner(q), eventID)
}

// own names session sid of user "u" of app "app", the fixture's.
func own(sid string) telemetry.Owner {
	return telemetry.Owner{AppName: "app", UserID: "u", SessionID: sid}
}
