package server_test

import (
	"context"
	"encoding/json"
	"iter"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/cost"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session/memsession"
)

// usageServer serves the app "meter", whose agent answers each message
// with two responses reporting usage: one of model "priced-1" (a release
// of the priced model "priced") and one of a model without a price.
func usageServer(t *testing.T, cfg server.Config) *server.Server {
	t.Helper()
	root, err := agent.New(agent.Config{Name: "meter", Run: func(_ context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(yield func(*event.Event, error) bool) {
			for _, r := range []struct {
				model       string
				prompt, out int32
			}{{"priced-1", 1000, 100}, {"unlisted", 500, 50}} {
				ev := inv.NewEvent()
				ev.Content = genai.NewContentFromText("ok", genai.RoleModel)
				ev.ModelVersion = r.model
				ev.UsageMetadata = &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: r.prompt,
					CandidatesTokenCount: r.out, CachedContentTokenCount: r.prompt / 2, TotalTokenCount: r.prompt + r.out}
				if !yield(ev, nil) {
					return
				}
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "meter", Agent: root, Sessions: memsession.NewService()})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Apps = []*runner.Runner{r}
	cfg.AllowedHosts = []string{"example.com"}
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func serve(t *testing.T, srv http.Handler, method, path, body string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	return w
}

// TestR16SessionUsageRoute runs two turns and reads the session's usage
// route: each turn's tokens and cost and the session's total, computed
// from the stored events and priced by Config.Prices (the unpriced
// model's tokens counted, its cost not); another user's session is
// refused and a missing one is not found. (CONFORMANCE R16)
func TestR16SessionUsageRoute(t *testing.T) {
	srv := usageServer(t, server.Config{Authenticate: bearer, Prices: cost.Prices{"priced": {Input: 2, Output: 8, CachedInput: 1}}})
	ann := []string{"Authorization", "Bearer ann-token"}
	if w := serve(t, srv, "POST", "/apps/meter/users/ann/sessions", `{"sessionId":"s"}`, ann...); w.Code != 200 {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	for _, msg := range []string{"one", "two"} {
		body := `{"appName":"meter","userId":"ann","sessionId":"s","newMessage":{"role":"user","parts":[{"text":"` + msg + `"}]}}`
		if w := serve(t, srv, "POST", "/run", body, ann...); w.Code != 200 {
			t.Fatalf("run: %d %s", w.Code, w.Body)
		}
	}
	w := serve(t, srv, "GET", "/apps/meter/users/ann/sessions/s/usage", "", ann...)
	if w.Code != 200 {
		t.Fatalf("usage: %d %s", w.Code, w.Body)
	}
	var got struct {
		Turns []struct {
			InvocationID string `json:"invocation_id"`
			Total        int64  `json:"total_tokens"`
			Cost         float64
			Unpriced     int `json:"unpriced_responses"`
		}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	var total map[string]float64
	if err := json.Unmarshal(raw["total"], &total); err != nil {
		t.Fatal(err)
	}
	// Per turn: priced (500 uncached·2 + 500 cached·1 + 100·8) = 2300 per million; the unlisted model's 550 tokens count too.
	turnCost := 2300 / 1e6
	want := map[string]float64{"responses": 4, "prompt_tokens": 3000, "candidates_tokens": 300, "thoughts_tokens": 0,
		"cached_tokens": 1500, "total_tokens": 3300, "cost": 2 * turnCost, "unpriced_responses": 2}
	if len(total) != len(want) {
		t.Errorf("total %v, want the keys of %v", total, want)
	}
	for k, v := range want {
		if math.Abs(total[k]-v) > 1e-12 {
			t.Errorf("total %s = %v, want %v", k, total[k], v)
		}
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Turns) != 2 {
		t.Fatalf("turns %+v", got.Turns)
	}
	for _, turn := range got.Turns {
		if turn.InvocationID == "" || turn.Total != 1650 || math.Abs(turn.Cost-turnCost) > 1e-12 || turn.Unpriced != 1 {
			t.Errorf("turn %+v, want 1650 tokens costing %v, one response unpriced", turn, turnCost)
		}
	}
	if got.Turns[0].InvocationID == got.Turns[1].InvocationID {
		t.Error("two turns with one invocation id")
	}

	bob := []string{"Authorization", "Bearer bob-token"}
	if w := serve(t, srv, "GET", "/apps/meter/users/ann/sessions/s/usage", "", bob...); w.Code != http.StatusForbidden {
		t.Errorf("another user's usage: %d %s, want 403", w.Code, w.Body)
	}
	if w := serve(t, srv, "GET", "/apps/meter/users/ann/sessions/nope/usage", "", ann...); w.Code != http.StatusNotFound {
		t.Errorf("missing session: %d %s, want 404", w.Code, w.Body)
	}
	if w := serve(t, srv, "GET", "/apps/nope/users/ann/sessions/s/usage", "", ann...); w.Code != http.StatusNotFound {
		t.Errorf("missing app: %d %s, want 404", w.Code, w.Body)
	}
}

// TestR16UsageWithoutPrices reports tokens and no cost when the server has
// no prices. (CONFORMANCE R16)
func TestR16UsageWithoutPrices(t *testing.T) {
	srv := usageServer(t, server.Config{})
	body := `{"appName":"meter","userId":"u","sessionId":"s","newMessage":{"role":"user","parts":[{"text":"hi"}]}}`
	if w := serve(t, srv, "POST", "/apps/meter/users/u/sessions", `{"sessionId":"s"}`); w.Code != 200 {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	if w := serve(t, srv, "POST", "/run", body); w.Code != 200 {
		t.Fatalf("run: %d %s", w.Code, w.Body)
	}
	var got cost.SessionUsage
	w := serve(t, srv, "GET", "/apps/meter/users/u/sessions/s/usage", "")
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != 200 {
		t.Fatalf("%d %s: %v", w.Code, w.Body, err)
	}
	if got.Total.Total != 1650 || got.Total.Cost != 0 || got.Total.Unpriced != 2 || len(got.Turns) != 1 {
		t.Errorf("usage %+v", got)
	}
}
