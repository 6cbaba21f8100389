package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/artifact/memartifact"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/retry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session/memsession"
)

// fixture is a server over one app, "demo", whose root agent reacts to the
// user's text:
//
//	hello     "Hello!" (after partials "Hel", "lo!" when streaming)
//	artifact  saves report.txt and says so, in one event
//	fail      "Working..." then an error
//	block     "Started." then waits for cancellation, reported on observed
//	wait      nothing until cancelled, reported on observed
//	ratelimit a model error with status 429
//	overloaded retries exhausted on a 529
//	upstream  a model error with status 400
//	multi     three events
//	other     "You said: <text>"
type fixture struct {
	srv      *server.Server
	runner   *runner.Runner
	started  chan struct{}
	observed chan error
}

func newFixture(t testing.TB, cfg server.Config) *fixture {
	t.Helper()
	f := &fixture{started: make(chan struct{}, 16), observed: make(chan error, 16)}
	helper, err := agent.New(agent.Config{
		Name: "helper", Description: "Helps out.",
		Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
			return func(func(*event.Event, error) bool) {}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	root, err := agent.New(agent.Config{
		Name: "root_agent", Description: "Answers in the tests.",
		SubAgents: []agent.Agent{helper},
		Run:       f.run,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.runner, err = runner.New(runner.Config{
		AppName:   "demo",
		Agent:     root,
		Sessions:  memsession.NewService(),
		Artifacts: memartifact.NewService(),
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Apps = append(cfg.Apps, f.runner)
	if cfg.AllowedHosts == nil {
		cfg.AllowedHosts = []string{"example.com"} // httptest.NewRequest's host
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	f.srv, err = server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func text(inv *agent.Invocation, s string) *event.Event {
	ev := inv.NewEvent()
	ev.Content = genai.NewContentFromText(s, genai.RoleModel)
	return ev
}

func (f *fixture) run(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
	return func(yield func(*event.Event, error) bool) {
		msg := ""
		if c := inv.UserContent(); c != nil && len(c.Parts) > 0 {
			msg = c.Parts[0].Text
		}
		switch msg {
		case "hello":
			if inv.RunConfig().Streaming {
				for _, chunk := range []string{"Hel", "lo!"} {
					ev := text(inv, chunk)
					ev.Partial = true
					if !yield(ev, nil) {
						return
					}
				}
			}
			yield(text(inv, "Hello!"), nil)
		case "artifact":
			cc := agent.NewCallbackContext(inv)
			if _, err := cc.SaveArtifact(ctx, "report.txt", genai.NewPartFromText("quarterly numbers")); err != nil {
				yield(nil, err)
				return
			}
			ev := cc.Event()
			ev.Content = genai.NewContentFromText("Saved report.txt.", genai.RoleModel)
			yield(ev, nil)
		case "fail":
			if !yield(text(inv, "Working..."), nil) {
				return
			}
			yield(nil, errors.New("tool exploded"))
		case "block":
			if !yield(text(inv, "Started."), nil) {
				return
			}
			f.started <- struct{}{}
			<-ctx.Done()
			f.observed <- ctx.Err()
			yield(nil, ctx.Err())
		case "wait":
			f.started <- struct{}{}
			<-ctx.Done()
			f.observed <- ctx.Err()
			yield(nil, ctx.Err())
		case "ratelimit":
			yield(nil, fmt.Errorf("call model: %w", &model.Error{Provider: "fake", StatusCode: 429, Code: "RESOURCE_EXHAUSTED", Message: "quota"}))
		case "overloaded":
			yield(nil, &retry.ExhaustedError{Attempts: 4, Err: &model.Error{Provider: "fake", StatusCode: 529, Message: "overloaded", Retryable: true}})
		case "upstream":
			yield(nil, &model.Error{Provider: "fake", StatusCode: 400, Code: "INVALID_ARGUMENT", Message: "bad schema"})
		case "multi":
			for _, s := range []string{"one", "two", "three"} {
				if !yield(text(inv, s), nil) {
					return
				}
			}
		default:
			yield(text(inv, "You said: "+msg), nil)
		}
	}
}

// do sends a request straight to the handler.
func (f *fixture) do(t *testing.T, method, path, body string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	var rd *strings.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	var req *http.Request
	if rd != nil {
		req = httptest.NewRequest(method, path, rd)
	} else {
		req = httptest.NewRequest(method, path, nil)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	f.srv.ServeHTTP(w, req)
	return w
}

func runBody(session, text string, streaming bool) string {
	b, _ := json.Marshal(map[string]any{
		"appName": "demo", "userId": "u1", "sessionId": session, "streaming": streaming,
		"newMessage": map[string]any{"role": "user", "parts": []any{map[string]any{"text": text}}},
	})
	return string(b)
}

// sseFrames splits an event-stream body into its frames.
func sseFrames(body string) []string {
	var out []string
	for f := range strings.SplitSeq(body, "\n\n") {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// frameEvent decodes a "data: {...}" frame.
func frameEvent(t *testing.T, frame string) map[string]any {
	t.Helper()
	data, ok := strings.CutPrefix(frame, "data: ")
	if !ok {
		t.Fatalf("frame %q is not a data frame", frame)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		t.Fatalf("frame %q: %v", frame, err)
	}
	return m
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// normalizeJSON replaces volatile values (uuids, timestamps, the Go
// version) with placeholders and indents the result.
func normalizeJSON(t *testing.T, data []byte, indent bool) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("response %q is not JSON: %v", data, err)
	}
	v = normalizeValue(v)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func normalizeValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			switch k {
			case "timestamp", "lastUpdateTime":
				if n, ok := val.(json.Number); ok && n != "0" {
					x[k] = "<time>"
					continue
				}
			case "language_version":
				x[k] = "<go>"
				continue
			}
			x[k] = normalizeValue(val)
		}
	case []any:
		for i := range x {
			x[i] = normalizeValue(x[i])
		}
	case string:
		return uuidRE.ReplaceAllString(x, "<uuid>")
	}
	return v
}
