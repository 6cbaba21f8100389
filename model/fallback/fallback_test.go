package fallback_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/fallback"
	"github.com/loomkit/loom/model/gemini"
	"github.com/loomkit/loom/model/internal/fakeapi"
	"github.com/loomkit/loom/model/openai"
	"github.com/loomkit/loom/model/retry"
)

// newModel is an OpenAI-compatible model on srv with one attempt per call
// (so each failure reaches the chain at once) and the given per-attempt
// timeout.
func newModel(t *testing.T, name string, srv *fakeapi.Server, timeout time.Duration) model.LLM {
	t.Helper()
	m, err := openai.New(name, &openai.Options{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(),
		Retry: &retry.Policy{MaxAttempts: 1, Timeout: timeout}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// newBackup is a Gemini model on srv: the chain crosses providers.
func newBackup(t *testing.T, name string, srv *fakeapi.Server) model.LLM {
	t.Helper()
	m, err := gemini.New(t.Context(), name, &genai.ClientConfig{
		APIKey: "test-key", Backend: genai.BackendGeminiAPI, HTTPClient: srv.Client(),
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL},
	}, &gemini.Options{Retry: &retry.Policy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// servers starts the primary's and the backup's servers. Both close before
// the leak check of fakeapi.Start runs.
func servers(t *testing.T, primary []fakeapi.Reply, backup []fakeapi.Reply) (*fakeapi.Server, *fakeapi.Server) {
	t.Helper()
	p := fakeapi.Start(t, primary...)
	b := fakeapi.New(backup...)
	t.Cleanup(b.Close)
	return p, b
}

func ask(text string) *model.Request {
	return &model.Request{Contents: []*genai.Content{genai.NewContentFromText(text, genai.RoleUser)}}
}

const apiError = `{"error":{"message":"%s","type":"server_error"}}`

// TestFallbackOnEachErrorClass: the primary fails with 429, 500, 503,
// 529, no answer within the attempt timeout, and content its API cannot
// carry; each time the backup answers, its response records the failed
// attempt (ADK's fallback keys plus every error), and the backup got the
// request. A 400 or 401 does not move on, nor does a stream that has
// already yielded a chunk.
func TestFallbackOnEachErrorClass(t *testing.T) {
	answer := fakeapi.File(t, 200, "testdata/backup.json", false)
	cases := []struct {
		name     string
		primary  fakeapi.Reply
		req      *model.Request
		wantCode string
	}{
		{"429", fakeapi.JSON(429, strings.Replace(apiError, "%s", "rate limited", 1)), ask("hi"), "429"},
		{"500", fakeapi.JSON(500, strings.Replace(apiError, "%s", "internal", 1)), ask("hi"), "500"},
		{"503", fakeapi.JSON(503, strings.Replace(apiError, "%s", "unavailable", 1)), ask("hi"), "503"},
		{"529", fakeapi.JSON(529, strings.Replace(apiError, "%s", "overloaded", 1)), ask("hi"), "529"},
		{"timeout", fakeapi.Reply{Hang: true}, ask("hi"), "TIMEOUT"},
		{"unsupported content", fakeapi.Reply{}, &model.Request{Contents: []*genai.Content{{Role: genai.RoleUser,
			Parts: []*genai.Part{{InlineData: &genai.Blob{MIMEType: "video/mp4", Data: []byte{0, 1}}}}}}}, "UNSUPPORTED_CONTENT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, stream := range []bool{false, true} {
				backup := answer
				if stream {
					backup = fakeapi.File(t, 200, "testdata/backup_stream.sse", true)
				}
				primarySrv, backupSrv := servers(t, []fakeapi.Reply{c.primary}, []fakeapi.Reply{backup})
				fm, err := fallback.New([]model.LLM{
					newModel(t, "primary-model", primarySrv, 200*time.Millisecond),
					newBackup(t, "backup-model", backupSrv),
				})
				if err != nil {
					t.Fatal(err)
				}
				resps, err := fakeapi.Collect(fm.Generate(t.Context(), c.req, stream))
				if err != nil {
					t.Fatalf("stream=%v: %v", stream, err)
				}
				if len(backupSrv.Requests()) != 1 {
					t.Fatalf("stream=%v: backup got %d requests", stream, len(backupSrv.Requests()))
				}
				last := resps[len(resps)-1]
				if last.Text() == "" {
					t.Fatalf("stream=%v: no answer", stream)
				}
				md := last.CustomMetadata
				errs, _ := md[fallback.KeyErrors].([]any)
				if md[fallback.KeyTriggered] != true || md[fallback.KeyOriginal] != "primary-model" ||
					md[fallback.KeyModel] != "backup-model" || md[fallback.KeyAttempt] != 1 ||
					md[fallback.KeyErrorCode] != c.wantCode || len(errs) != 1 {
					t.Fatalf("stream=%v: metadata %v", stream, md)
				}
				if e := errs[0].(map[string]any); e["model"] != "primary-model" || e["error"] == "" {
					t.Fatalf("stream=%v: recorded failure %v", stream, e)
				}
				if last.UsageMetadata == nil || last.UsageMetadata.TotalTokenCount == 0 {
					t.Fatalf("stream=%v: the backup's usage is missing", stream)
				}
			}
		})
	}
}

// TestFallbackStopsOnRequestErrors: a 400 or 401 says the request (or the
// credentials) are wrong: the chain does not move on and the caller gets
// the primary's error.
func TestFallbackStopsOnRequestErrors(t *testing.T) {
	for _, status := range []int{http.StatusBadRequest, http.StatusUnauthorized} {
		primarySrv, backupSrv := servers(t, []fakeapi.Reply{fakeapi.JSON(status, strings.Replace(apiError, "%s", "bad", 1))}, nil)
		fm, _ := fallback.New([]model.LLM{newModel(t, "p", primarySrv, 0), newBackup(t, "b", backupSrv)})
		_, err := fakeapi.Collect(fm.Generate(t.Context(), ask("hi"), false))
		var me *model.Error
		if !errors.As(err, &me) || me.StatusCode != status {
			t.Fatalf("%d: err = %v", status, err)
		}
		if n := len(backupSrv.Requests()); n != 0 {
			t.Fatalf("%d: backup got %d requests", status, n)
		}
	}
}

// TestFallbackNotAfterYield: a stream cut after its first chunk ends with
// the error; the chunk is not followed by another model's answer.
func TestFallbackNotAfterYield(t *testing.T) {
	primarySrv, backupSrv := servers(t, []fakeapi.Reply{{SSE: true, Cut: true, Body: fakeapi.File(t, 200, "testdata/partial_cut.sse", true).Body}}, nil)
	fm, _ := fallback.New([]model.LLM{newModel(t, "p", primarySrv, 0), newBackup(t, "b", backupSrv)})
	resps, err := fakeapi.Collect(fm.Generate(t.Context(), ask("hi"), true))
	if err == nil || len(resps) == 0 {
		t.Fatalf("got %d responses, err %v; want the chunk then an error", len(resps), err)
	}
	if n := len(backupSrv.Requests()); n != 0 {
		t.Fatalf("backup got %d requests after a chunk was yielded", n)
	}
}

// TestFallbackEveryModelFails: the error names each model's failure, in
// order, and errors.As finds the last model's *model.Error.
func TestFallbackEveryModelFails(t *testing.T) {
	a, b := servers(t, []fakeapi.Reply{fakeapi.JSON(429, strings.Replace(apiError, "%s", "slow down", 1))},
		[]fakeapi.Reply{fakeapi.JSON(503, `{"error":{"code":503,"message":"down","status":"UNAVAILABLE"}}`)})
	fm, _ := fallback.New([]model.LLM{newModel(t, "first", a, 0), newBackup(t, "second", b)})
	_, err := fakeapi.Collect(fm.Generate(t.Context(), ask("hi"), false))
	var ce *fallback.ChainError
	if !errors.As(err, &ce) || len(ce.Failures) != 2 || ce.Failures[0].Model != "first" || ce.Failures[1].Model != "second" {
		t.Fatalf("err = %v", err)
	}
	var me *model.Error
	if !errors.As(err, &me) || me.StatusCode != 503 {
		t.Fatalf("errors.As found %v, want the last model's 503", me)
	}
}

// TestFallbackCallerCancelled: the caller's own cancellation ends the call;
// no other model is tried.
func TestFallbackCallerCancelled(t *testing.T) {
	a, b := servers(t, []fakeapi.Reply{{Hang: true}}, nil)
	fm, _ := fallback.New([]model.LLM{newModel(t, "first", a, -1), newBackup(t, "second", b)})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := fakeapi.Collect(fm.Generate(ctx, ask("hi"), false))
	if err == nil {
		t.Fatal("no error")
	}
	if n := len(b.Requests()); n != 0 {
		t.Fatalf("second model got %d requests after the caller gave up", n)
	}
}

// TestFallbackOverrideNamesFirstOnly: a request's Model override is for the
// first model; the others are asked under their own names.
func TestFallbackOverrideNamesFirstOnly(t *testing.T) {
	a, b := servers(t, []fakeapi.Reply{fakeapi.JSON(500, strings.Replace(apiError, "%s", "x", 1))},
		[]fakeapi.Reply{fakeapi.File(t, 200, "testdata/backup.json", false)})
	fm, _ := fallback.New([]model.LLM{newModel(t, "first", a, 0), newBackup(t, "second", b)})
	req := ask("hi")
	req.Model = "first-override"
	if _, err := fakeapi.Collect(fm.Generate(t.Context(), req, false)); err != nil {
		t.Fatal(err)
	}
	if body := string(a.Requests()[0].Body); !strings.Contains(body, `"model":"first-override"`) {
		t.Errorf("first model's request: %s", body)
	}
	if path := b.Requests()[0].Path; !strings.Contains(path, "/models/second:") {
		t.Errorf("second model's request went to %s", path)
	}
	if req.Model != "first-override" {
		t.Error("the caller's request was changed")
	}
}

func TestNewRefusesEmptyChain(t *testing.T) {
	if _, err := fallback.New(nil); err == nil {
		t.Fatal("no error for an empty chain")
	}
	if _, err := fallback.New([]model.LLM{nil}); err == nil {
		t.Fatal("no error for a nil model")
	}
}
