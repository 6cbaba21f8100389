package gemini_test

import (
	"errors"
	"flag"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/gemini"
	"github.com/loomkit/loom/model/internal/fakeapi"
	"github.com/loomkit/loom/model/retry"
)

var update = flag.Bool("update", false, "rewrite golden request files")

func newModel(t *testing.T, srv *fakeapi.Server, p *retry.Policy) *gemini.Model {
	t.Helper()
	m, err := gemini.New(t.Context(), "gemini-2.5-flash", &genai.ClientConfig{
		APIKey:      "test-key",
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  srv.Client(),
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL},
	}, &gemini.Options{Retry: p})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ptr[T any](v T) *T { return &v }

func richRequest() *model.Request {
	return &model.Request{
		Contents: []*genai.Content{
			{Role: genai.RoleUser, Parts: []*genai.Part{
				{Text: "What is the weather in Paris and Tokyo?"},
				{InlineData: &genai.Blob{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}},
			}},
			{Role: genai.RoleModel, Parts: []*genai.Part{
				{FunctionCall: &genai.FunctionCall{ID: "c1", Name: "get_weather", Args: map[string]any{"city": "Paris"}}, ThoughtSignature: []byte("sig")},
				{FunctionCall: &genai.FunctionCall{ID: "c2", Name: "get_weather", Args: map[string]any{"city": "Tokyo"}}},
			}},
			{Role: genai.RoleUser, Parts: []*genai.Part{
				{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "get_weather", Response: map[string]any{"forecast": "sunny"}}},
				{FunctionResponse: &genai.FunctionResponse{ID: "c2", Name: "get_weather", Response: map[string]any{"forecast": "rain"}}},
			}},
		},
		Config: &genai.GenerateContentConfig{
			SystemInstruction: &genai.Content{Parts: []*genai.Part{{Text: "You are a weather bot."}}},
			Temperature:       ptr[float32](0.5),
			MaxOutputTokens:   256,
			ThinkingConfig:    &genai.ThinkingConfig{IncludeThoughts: true},
			Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
				Name:        "get_weather",
				Description: "Returns the forecast for a city.",
				Parameters: &genai.Schema{
					Type:       genai.TypeObject,
					Properties: map[string]*genai.Schema{"city": {Type: genai.TypeString}},
					Required:   []string{"city"},
				},
			}}}, {GoogleSearch: &genai.GoogleSearch{}}, {URLContext: &genai.URLContext{}}, {CodeExecution: &genai.ToolCodeExecution{}}},
		},
	}
}

func TestRequestGolden(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name, reply, golden, path := "unary", fakeapi.File(t, 200, "testdata/text.json", false), "testdata/request.golden.json", "/v1beta/models/gemini-2.5-flash:generateContent"
		if stream {
			name, reply, golden, path = "stream", fakeapi.File(t, 200, "testdata/stream_text.sse", true), "testdata/request_stream.golden.json", "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
		}
		t.Run(name, func(t *testing.T) {
			srv := fakeapi.Start(t, reply)
			req := richRequest()
			if _, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), req, stream)); err != nil {
				t.Fatal(err)
			}
			if req.Config.SystemInstruction.Role != "" {
				t.Error("the caller's system instruction was modified")
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != http.MethodPost || r.Path != path {
				t.Errorf("request = %s %s, want %s", r.Method, r.Path, path)
			}
			if got := r.Header.Get("X-Goog-Api-Key"); got != "test-key" {
				t.Errorf("x-goog-api-key = %q", got)
			}
			fakeapi.Golden(t, golden, fakeapi.Indent(r.Body), *update)
		})
	}
}

func userText(s string) *model.Request {
	return &model.Request{Contents: []*genai.Content{genai.NewContentFromText(s, genai.RoleUser)}}
}

func TestText(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/text.json", false))
	resps, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), userText("weather?"), false))
	if err != nil {
		t.Fatal(err)
	}
	r := resps[0]
	if len(resps) != 1 || r.Text() != "It is sunny in Paris." || r.Partial || r.FinishReason != genai.FinishReasonStop {
		t.Fatalf("responses = %+v", resps)
	}
	if r.ModelVersion != "gemini-2.5-flash-001" || r.AvgLogprobs != -0.25 {
		t.Errorf("ModelVersion=%q AvgLogprobs=%v", r.ModelVersion, r.AvgLogprobs)
	}
	if r.CitationMetadata == nil || len(r.CitationMetadata.Citations) != 1 || r.CitationMetadata.Citations[0].URI != "https://example.com/weather" {
		t.Errorf("citations = %+v", r.CitationMetadata)
	}
	if r.GroundingMetadata == nil || len(r.GroundingMetadata.WebSearchQueries) != 1 {
		t.Errorf("grounding = %+v", r.GroundingMetadata)
	}
	if u := r.UsageMetadata; u == nil || u.TotalTokenCount != 49 {
		t.Errorf("usage = %+v", u)
	}
}

func calls(r *model.Response) []*genai.FunctionCall {
	var out []*genai.FunctionCall
	for _, p := range r.Content.Parts {
		if p.FunctionCall != nil {
			out = append(out, p.FunctionCall)
		}
	}
	return out
}

func checkCalls(t *testing.T, r *model.Response) {
	t.Helper()
	got := calls(r)
	if len(got) != 2 || got[0].Args["city"] != "Paris" || got[1].Args["city"] != "Tokyo" || got[0].Name != "get_weather" {
		t.Errorf("calls = %+v", got)
	}
}

func TestParallelFunctionCalls(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/calls.json", false))
	resps, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), userText("weather?"), false))
	if err != nil {
		t.Fatal(err)
	}
	checkCalls(t, resps[0])
	if sig := resps[0].Content.Parts[0].ThoughtSignature; string(sig) != "sig-abc" {
		t.Errorf("thought signature = %q", sig)
	}
}

func TestBlockedPrompt(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/blocked.json", false))
	resps, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), userText("bad"), false))
	if err != nil {
		t.Fatal(err)
	}
	if r := resps[0]; r.ErrorCode != "SAFETY" || r.ErrorMessage != "blocked for safety" || r.Content != nil {
		t.Errorf("response = %+v", r)
	}
}

func TestStreamText(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/stream_text.sse", true))
	resps, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), userText("weather?"), true))
	if err != nil {
		t.Fatal(err)
	}
	if len(resps) != 5 {
		t.Fatalf("got %d responses, want 4 partial and 1 final", len(resps))
	}
	for _, r := range resps[:4] {
		if !r.Partial {
			t.Errorf("chunk not partial: %+v", r)
		}
	}
	final := resps[4]
	parts := final.Content.Parts
	if final.Partial || len(parts) != 2 || !parts[0].Thought || parts[0].Text != "Let me think." || parts[1].Text != "It is sunny in Paris." {
		t.Errorf("final = %+v parts = %+v", final, parts)
	}
	if final.FinishReason != genai.FinishReasonStop || final.UsageMetadata == nil || final.UsageMetadata.ThoughtsTokenCount != 4 {
		t.Errorf("final metadata = %+v", final)
	}
}

func TestStreamFunctionCallsAcrossChunks(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/stream_calls.sse", true))
	resps, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), userText("weather?"), true))
	if err != nil {
		t.Fatal(err)
	}
	final := resps[len(resps)-1]
	if final.Partial || final.Text() != "Checking both." {
		t.Errorf("final = %+v", final)
	}
	checkCalls(t, final)
	if u := final.UsageMetadata; u == nil || u.TotalTokenCount != 90 {
		t.Errorf("usage = %+v", u)
	}
}

func TestStreamCut(t *testing.T) {
	cut := fakeapi.File(t, 200, "testdata/stream_cut.sse", true)
	cut.Cut = true
	srv := fakeapi.Start(t, cut)
	var clock fakeapi.Clock
	resps, err := fakeapi.Collect(newModel(t, srv, clock.Policy(4)).Generate(t.Context(), userText("hi"), true))
	if err == nil {
		t.Fatal("want an error for a cut stream")
	}
	if len(resps) == 0 {
		t.Error("want the chunks that arrived before the cut")
	}
	for _, r := range resps {
		if !r.Partial {
			t.Errorf("non-partial response from a cut stream: %+v", r)
		}
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("got %d requests; no retry after chunks were yielded", n)
	}
}

func TestMalformedJSON(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reply  fakeapi.Reply
		stream bool
	}{
		{"unary", fakeapi.File(t, 200, "testdata/malformed.json", false), false},
		{"stream", fakeapi.File(t, 200, "testdata/stream_malformed.sse", true), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeapi.Start(t, tc.reply)
			resps, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), userText("hi"), tc.stream))
			var me *model.Error
			if !errors.As(err, &me) || me.Retryable {
				t.Fatalf("err = %v, want a non-retryable *model.Error", err)
			}
			if len(resps) != 0 {
				t.Errorf("got responses %+v", resps)
			}
		})
	}
}

func apiError(status int, code, msg string) fakeapi.Reply {
	return fakeapi.JSON(status, `{"error":{"code":`+strconv.Itoa(status)+`,"message":"`+msg+`","status":"`+code+`"}}`)
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	for _, tc := range []struct {
		status int
		code   string
	}{
		{400, "INVALID_ARGUMENT"},
		{401, "UNAUTHENTICATED"},
	} {
		t.Run(tc.code, func(t *testing.T) {
			srv := fakeapi.Start(t, apiError(tc.status, tc.code, "nope"))
			var clock fakeapi.Clock
			_, err := fakeapi.Collect(newModel(t, srv, clock.Policy(4)).Generate(t.Context(), userText("hi"), false))
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want *model.Error", err)
			}
			if me.StatusCode != tc.status || me.Code != tc.code || me.Message != "nope" || me.Retryable || me.Provider != "gemini" {
				t.Errorf("error = %+v", me)
			}
			if n := len(srv.Requests()); n != 1 || len(clock.Waits()) != 0 {
				t.Errorf("requests = %d waits = %v, want 1 and none", n, clock.Waits())
			}
		})
	}
}

func TestRetryInfoIsHonoured(t *testing.T) {
	exhausted := fakeapi.JSON(429, `{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"4s"}]}}`)
	srv := fakeapi.Start(t, exhausted, apiError(503, "UNAVAILABLE", "busy"), fakeapi.File(t, 200, "testdata/stream_text.sse", true))
	var clock fakeapi.Clock
	resps, err := fakeapi.Collect(newModel(t, srv, clock.Policy(4)).Generate(t.Context(), userText("hi"), true))
	if err != nil {
		t.Fatal(err)
	}
	if final := resps[len(resps)-1]; final.Partial || final.Text() != "It is sunny in Paris." {
		t.Errorf("final = %+v", final)
	}
	waits := clock.Waits()
	if len(waits) != 2 || waits[0] != 4*time.Second || waits[1] != 200*time.Millisecond {
		t.Errorf("waits = %v, want [4s 200ms]", waits)
	}
}

func TestServerErrorsExhaustRetries(t *testing.T) {
	fail := apiError(500, "INTERNAL", "boom")
	srv := fakeapi.Start(t, fail, fail)
	var clock fakeapi.Clock
	_, err := fakeapi.Collect(newModel(t, srv, clock.Policy(2)).Generate(t.Context(), userText("hi"), false))
	var ex *retry.ExhaustedError
	var me *model.Error
	if !errors.As(err, &ex) || ex.Attempts != 2 || !errors.As(err, &me) || me.StatusCode != 500 {
		t.Fatalf("err = %v, want exhausted after 2 attempts with the last 500", err)
	}
	if len(clock.Waits()) != 1 {
		t.Errorf("waits = %v, want 1", clock.Waits())
	}
}

func TestStreamBreakEarly(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/stream_text.sse", true))
	n := 0
	for r, err := range newModel(t, srv, nil).Generate(t.Context(), userText("hi"), true) {
		if err != nil {
			t.Fatal(err)
		}
		if !r.Partial {
			t.Fatal("first response should be partial")
		}
		n++
		break
	}
	if n != 1 {
		t.Errorf("got %d responses before break", n)
	}
}

// TestHungAttemptIsRetried: an attempt the provider never answers ends at
// the policy's per-attempt timeout and is retried.
func TestHungAttemptIsRetried(t *testing.T) {
	for _, stream := range []bool{false, true} {
		reply := fakeapi.File(t, 200, "testdata/text.json", false)
		if stream {
			reply = fakeapi.File(t, 200, "testdata/stream_text.sse", true)
		}
		srv := fakeapi.Start(t, fakeapi.Reply{Hang: true}, reply)
		var clock fakeapi.Clock
		p := clock.Policy(2)
		p.Timeout = 100 * time.Millisecond
		resps, err := fakeapi.Collect(newModel(t, srv, p).Generate(t.Context(), userText("hi"), stream))
		if err != nil {
			t.Fatalf("stream=%v: %v", stream, err)
		}
		if n := len(srv.Requests()); n != 2 || len(resps) == 0 {
			t.Errorf("stream=%v: requests = %d, responses = %d", stream, n, len(resps))
		}
	}
}

// TestRetryAfterHeaderIsHonoured: a Retry-After header sets the wait when
// the error carries no RetryInfo.
func TestRetryAfterHeaderIsHonoured(t *testing.T) {
	limited := apiError(429, "RESOURCE_EXHAUSTED", "quota")
	limited.Header = http.Header{"Retry-After": {"3"}}
	srv := fakeapi.Start(t, limited, fakeapi.File(t, 200, "testdata/text.json", false))
	var clock fakeapi.Clock
	if _, err := fakeapi.Collect(newModel(t, srv, clock.Policy(4)).Generate(t.Context(), userText("hi"), false)); err != nil {
		t.Fatal(err)
	}
	if waits := clock.Waits(); len(waits) != 1 || waits[0] != 3*time.Second {
		t.Errorf("waits = %v, want [3s]", waits)
	}
}

// TestRetryAfterBeyondBudget: a requested wait longer than the policy
// allows ends the retries with an error that says so.
func TestRetryAfterBeyondBudget(t *testing.T) {
	limited := apiError(429, "RESOURCE_EXHAUSTED", "quota")
	limited.Header = http.Header{"Retry-After": {"60"}}
	srv := fakeapi.Start(t, limited)
	var clock fakeapi.Clock
	_, err := fakeapi.Collect(newModel(t, srv, clock.Policy(4)).Generate(t.Context(), userText("hi"), false))
	var ex *retry.ExhaustedError
	if !errors.As(err, &ex) || !strings.Contains(err.Error(), "retry after 1m0s") || !strings.Contains(err.Error(), "MaxDelay") {
		t.Fatalf("err = %v, want one saying the requested wait exceeds MaxDelay", err)
	}
}

// TestTruncatedBodyIsRetried: a non-streaming response cut in the middle
// of its body is a transport failure, retried.
func TestTruncatedBodyIsRetried(t *testing.T) {
	full := fakeapi.File(t, 200, "testdata/text.json", false)
	cut := fakeapi.Reply{Body: full.Body[:len(full.Body)/2], Cut: true}
	srv := fakeapi.Start(t, cut, full)
	var clock fakeapi.Clock
	resps, err := fakeapi.Collect(newModel(t, srv, clock.Policy(2)).Generate(t.Context(), userText("hi"), false))
	if err != nil {
		t.Fatal(err)
	}
	if len(resps) != 1 || len(srv.Requests()) != 2 {
		t.Errorf("responses = %d, requests = %d", len(resps), len(srv.Requests()))
	}
}

// TestToolsWithSchema checks that the Gemini Developer API is reported as
// unable to combine tools with a response schema, so agents use a
// final-answer tool there.
func TestToolsWithSchema(t *testing.T) {
	srv := fakeapi.Start(t)
	var m model.LLM = newModel(t, srv, nil)
	c, ok := m.(model.ToolsWithSchema)
	if !ok || c.ToolsWithSchema() {
		t.Fatalf("implements=%v, combines on the Gemini API=%v", ok, ok && c.ToolsWithSchema())
	}
}
