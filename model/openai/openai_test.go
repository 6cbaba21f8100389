package openai_test

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/internal/fakeapi"
	"github.com/loomkit/loom/model/openai"
	"github.com/loomkit/loom/model/retry"
)

var update = flag.Bool("update", false, "rewrite golden request files")

func newModel(t *testing.T, srv *fakeapi.Server, p *retry.Policy) *openai.Model {
	t.Helper()
	m, err := openai.New("gpt-4o-mini", &openai.Options{
		APIKey:     "test-key",
		BaseURL:    srv.URL + "/v1",
		HTTPClient: srv.Client(),
		Retry:      p,
		Now:        func() time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ptr[T any](v T) *T { return &v }

// richRequest exercises every mapping rule: system instruction, text and
// image input, a model turn with parallel function calls, the matching
// function responses, tools with both schema styles, sampling settings and a
// response schema.
func richRequest() *model.Request {
	return &model.Request{
		Contents: []*genai.Content{
			{Role: genai.RoleUser, Parts: []*genai.Part{
				{Text: "What is the weather in Paris and Tokyo? See the map."},
				{InlineData: &genai.Blob{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}},
			}},
			{Role: genai.RoleModel, Parts: []*genai.Part{
				{Text: "thinking...", Thought: true},
				{Text: "Checking both."},
				{FunctionCall: &genai.FunctionCall{ID: "call_a", Name: "get_weather", Args: map[string]any{"city": "Paris"}}},
				{FunctionCall: &genai.FunctionCall{ID: "call_b", Name: "get_weather", Args: map[string]any{"city": "Tokyo"}}},
			}},
			{Role: genai.RoleUser, Parts: []*genai.Part{
				{FunctionResponse: &genai.FunctionResponse{ID: "call_a", Name: "get_weather", Response: map[string]any{"forecast": "sunny"}}},
				{FunctionResponse: &genai.FunctionResponse{ID: "call_b", Name: "get_weather", Response: map[string]any{"forecast": "rain"}}},
			}},
		},
		Config: &genai.GenerateContentConfig{
			SystemInstruction: genai.NewContentFromText("You are a weather bot.", genai.RoleUser),
			ThinkingConfig:    &genai.ThinkingConfig{IncludeThoughts: true, ThinkingLevel: genai.ThinkingLevelHigh},
			Temperature:       ptr[float32](0.5),
			MaxOutputTokens:   256,
			StopSequences:     []string{"END"},
			Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{
				{
					Name:        "get_weather",
					Description: "Returns the forecast for a city.",
					Parameters: &genai.Schema{
						Type:       genai.TypeObject,
						Properties: map[string]*genai.Schema{"city": {Type: genai.TypeString, Description: "City name."}},
						Required:   []string{"city"},
					},
				},
				{
					Name:                 "get_time",
					ParametersJsonSchema: map[string]any{"type": "object", "properties": map[string]any{"tz": map[string]any{"type": "string"}}},
				},
			}}, {GoogleSearch: &genai.GoogleSearch{}}},
			ToolConfig: &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAuto}},
		},
	}
}

func TestRequestGolden(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name, reply, golden := "unary", fakeapi.File(t, 200, "testdata/text.json", false), "testdata/request.golden.json"
		if stream {
			name, reply, golden = "stream", fakeapi.File(t, 200, "testdata/stream_text.sse", true), "testdata/request_stream.golden.json"
		}
		t.Run(name, func(t *testing.T) {
			srv := fakeapi.Start(t, reply)
			m := newModel(t, srv, nil)
			if _, err := fakeapi.Collect(m.Generate(t.Context(), richRequest(), stream)); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != http.MethodPost || r.Path != "/v1/chat/completions" {
				t.Errorf("request = %s %s", r.Method, r.Path)
			}
			if got := r.Header.Get("Authorization"); got != "Bearer test-key" {
				t.Errorf("Authorization = %q", got)
			}
			fakeapi.Golden(t, golden, fakeapi.Indent(r.Body), *update)
		})
	}
}

func TestNoAPIKeySendsNoAuthorization(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/text.json", false))
	m, err := openai.New("llama3.2", &openai.Options{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), LegacyMaxTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Contents: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}, Config: &genai.GenerateContentConfig{MaxOutputTokens: 10}}
	if _, err := fakeapi.Collect(m.Generate(t.Context(), req, false)); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if got := r.Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q, want none", got)
	}
	if !strings.Contains(string(r.Body), `"max_tokens":10`) {
		t.Errorf("body %s lacks max_tokens", r.Body)
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
	if len(resps) != 1 {
		t.Fatalf("got %d responses, want 1", len(resps))
	}
	r := resps[0]
	if r.Text() != "It is sunny in Paris." || r.Partial || r.FinishReason != genai.FinishReasonStop {
		t.Errorf("response = %+v", r)
	}
	if r.ModelVersion != "gpt-4o-mini-2024-07-18" {
		t.Errorf("ModelVersion = %q", r.ModelVersion)
	}
	u := r.UsageMetadata
	if u == nil || u.PromptTokenCount != 42 || u.CandidatesTokenCount != 7 || u.TotalTokenCount != 49 || u.CachedContentTokenCount != 10 {
		t.Errorf("usage = %+v", u)
	}
}

func TestParallelFunctionCalls(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/parallel_calls.json", false))
	resps, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), userText("weather?"), false))
	if err != nil {
		t.Fatal(err)
	}
	checkCalls(t, resps[0], "")
}

func checkCalls(t *testing.T, r *model.Response, text string) {
	t.Helper()
	if r.Partial || r.FinishReason != genai.FinishReasonStop {
		t.Errorf("Partial=%v FinishReason=%q", r.Partial, r.FinishReason)
	}
	if r.Text() != text {
		t.Errorf("text = %q, want %q", r.Text(), text)
	}
	var calls []*genai.FunctionCall
	for _, p := range r.Content.Parts {
		if p.FunctionCall != nil {
			calls = append(calls, p.FunctionCall)
		}
	}
	want := []struct{ id, city string }{{"call_a", "Paris"}, {"call_b", "Tokyo"}}
	if len(calls) != len(want) {
		t.Fatalf("got %d calls, want %d", len(calls), len(want))
	}
	for i, w := range want {
		c := calls[i]
		if c.ID != w.id || c.Name != "get_weather" || c.Args["city"] != w.city {
			t.Errorf("call %d = %+v, want id %s city %s", i, c, w.id, w.city)
		}
	}
}

func TestReasoningBecomesThought(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/reasoning.json", false))
	resps, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), userText("6*7"), false))
	if err != nil {
		t.Fatal(err)
	}
	r := resps[0]
	parts := r.Content.Parts
	if len(parts) != 2 || !parts[0].Thought || parts[0].Text != "Six times seven." || parts[1].Text != "42" {
		t.Errorf("parts = %+v", parts)
	}
	if r.FinishReason != genai.FinishReasonMaxTokens {
		t.Errorf("FinishReason = %q, want MAX_TOKENS", r.FinishReason)
	}
	if u := r.UsageMetadata; u.ThoughtsTokenCount != 15 || u.CandidatesTokenCount != 5 {
		t.Errorf("usage = %+v", u)
	}
}

func TestRefusalIsAResponseNotAnError(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/refusal.json", false))
	resps, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), userText("bad"), false))
	if err != nil {
		t.Fatal(err)
	}
	r := resps[0]
	if r.ErrorCode != "REFUSAL" || r.ErrorMessage != "I can't help with that." || r.FinishReason != genai.FinishReasonSafety {
		t.Errorf("response = %+v", r)
	}
}

func TestStreamText(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/stream_text.sse", true))
	resps, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), userText("weather?"), true))
	if err != nil {
		t.Fatal(err)
	}
	var partial []string
	for _, r := range resps[:len(resps)-1] {
		if !r.Partial {
			t.Errorf("non-final response is not partial: %+v", r)
		}
		partial = append(partial, r.Text())
	}
	if got := strings.Join(partial, "|"); got != "It is |sunny |in Paris." {
		t.Errorf("partials = %q", got)
	}
	final := resps[len(resps)-1]
	if final.Partial || final.Text() != "It is sunny in Paris." || final.FinishReason != genai.FinishReasonStop {
		t.Errorf("final = %+v", final)
	}
	if len(final.Content.Parts) != 1 {
		t.Errorf("final has %d parts, want the text merged into 1", len(final.Content.Parts))
	}
	if u := final.UsageMetadata; u == nil || u.TotalTokenCount != 49 {
		t.Errorf("usage = %+v", u)
	}
}

func TestStreamFunctionCallArgumentsSplitAcrossChunks(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/stream_calls.sse", true))
	resps, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), userText("weather?"), true))
	if err != nil {
		t.Fatal(err)
	}
	if len(resps) != 2 || !resps[0].Partial || resps[0].Text() != "Checking both." {
		t.Fatalf("responses = %+v", resps)
	}
	checkCalls(t, resps[1], "Checking both.")
	if u := resps[1].UsageMetadata; u == nil || u.TotalTokenCount != 90 {
		t.Errorf("usage = %+v", u)
	}
}

func TestStreamReasoning(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/stream_reasoning.sse", true))
	resps, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), userText("6*7"), true))
	if err != nil {
		t.Fatal(err)
	}
	final := resps[len(resps)-1]
	parts := final.Content.Parts
	if final.Partial || len(parts) != 2 || !parts[0].Thought || parts[0].Text != "Six times seven." || parts[1].Text != "42" {
		t.Errorf("final parts = %+v", parts)
	}
}

// A stream cut in the middle ends with an error and never with an
// aggregated response that claims success.
func TestStreamCut(t *testing.T) {
	cut := fakeapi.File(t, 200, "testdata/stream_cut.sse", true)
	cut.Cut = true
	srv := fakeapi.Start(t, cut)
	var clock fakeapi.Clock
	resps, err := fakeapi.Collect(newModel(t, srv, clock.Policy(4)).Generate(t.Context(), userText("weather?"), true))
	if err == nil {
		t.Fatal("want an error for a cut stream")
	}
	for _, r := range resps {
		if !r.Partial {
			t.Errorf("got a non-partial response from a cut stream: %+v", r)
		}
	}
	if len(resps) == 0 {
		t.Error("want the partial chunks that arrived before the cut")
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("got %d requests; a stream must not be retried once chunks were yielded", n)
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
			for _, r := range resps {
				if !r.Partial {
					t.Errorf("non-partial response from a malformed stream: %+v", r)
				}
			}
		})
	}
}

func apiError(status int, msg, typ, code string) fakeapi.Reply {
	return fakeapi.JSON(status, `{"error":{"message":"`+msg+`","type":"`+typ+`","param":null,"code":"`+code+`"}}`)
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	for _, tc := range []struct {
		status int
		code   string
	}{
		{400, "invalid_request_error"},
		{401, "invalid_api_key"},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			srv := fakeapi.Start(t, apiError(tc.status, "nope", "invalid_request_error", tc.code))
			var clock fakeapi.Clock
			_, err := fakeapi.Collect(newModel(t, srv, clock.Policy(4)).Generate(t.Context(), userText("hi"), false))
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want *model.Error", err)
			}
			if me.StatusCode != tc.status || me.Code != tc.code || me.Message != "nope" || me.Retryable || me.Provider != "openai" {
				t.Errorf("error = %+v", me)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("got %d requests, want 1", n)
			}
			if len(clock.Waits()) != 0 {
				t.Errorf("waits = %v, want none", clock.Waits())
			}
		})
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	for _, stream := range []bool{false, true} {
		ok := fakeapi.File(t, 200, "testdata/text.json", false)
		if stream {
			ok = fakeapi.File(t, 200, "testdata/stream_text.sse", true)
		}
		limited := apiError(429, "slow down", "rate_limit_error", "rate_limit_exceeded")
		limited.Header = http.Header{"Retry-After": {"3"}}
		dated := apiError(503, "busy", "server_error", "")
		dated.Header = http.Header{"Retry-After": {"Wed, 01 Jan 2025 00:00:07 GMT"}}
		srv := fakeapi.Start(t, limited, dated, ok)
		var clock fakeapi.Clock
		resps, err := fakeapi.Collect(newModel(t, srv, clock.Policy(4)).Generate(t.Context(), userText("hi"), stream))
		if err != nil {
			t.Fatal(err)
		}
		if final := resps[len(resps)-1]; final.Text() != "It is sunny in Paris." {
			t.Errorf("final = %+v", final)
		}
		waits := clock.Waits()
		if len(waits) != 2 || waits[0] != 3*time.Second || waits[1] != 7*time.Second {
			t.Errorf("waits = %v, want [3s 7s] from Retry-After", waits)
		}
		if n := len(srv.Requests()); n != 3 {
			t.Errorf("got %d requests, want 3", n)
		}
	}
}

func TestServerErrorsExhaustRetries(t *testing.T) {
	fail := apiError(500, "internal", "server_error", "")
	srv := fakeapi.Start(t, fail, fail, fail, fail)
	var clock fakeapi.Clock
	_, err := fakeapi.Collect(newModel(t, srv, clock.Policy(4)).Generate(t.Context(), userText("hi"), true))
	var ex *retry.ExhaustedError
	if !errors.As(err, &ex) || ex.Attempts != 4 {
		t.Fatalf("err = %v, want ExhaustedError after 4 attempts", err)
	}
	var me *model.Error
	if !errors.As(err, &me) || me.StatusCode != 500 || !me.Retryable {
		t.Errorf("err = %v, want the last *model.Error (500)", err)
	}
	if !strings.Contains(err.Error(), "4 attempts") {
		t.Errorf("message %q does not mention the attempt count", err)
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}
	if got := clock.Waits(); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("waits = %v, want exponential %v", got, want)
	}
	if n := len(srv.Requests()); n != 4 {
		t.Errorf("got %d requests, want 4", n)
	}
}

// Breaking out of the stream stops the iterator and releases the HTTP
// response; the leak check registered by fakeapi.Start verifies it (R6).
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

func TestCancelledContext(t *testing.T) {
	srv := fakeapi.Start(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := fakeapi.Collect(newModel(t, srv, nil).Generate(ctx, userText("hi"), false))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestUnsupportedPart(t *testing.T) {
	m, err := openai.New("gpt-4o", nil)
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Contents: []*genai.Content{{Role: genai.RoleUser, Parts: []*genai.Part{{InlineData: &genai.Blob{MIMEType: "video/mp4", Data: []byte{1}}}}}}}
	_, err = fakeapi.Collect(m.Generate(t.Context(), req, false))
	if !errors.Is(err, model.ErrUnsupportedContent) {
		t.Errorf("err = %v, want model.ErrUnsupportedContent", err)
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
		resps, err := fakeapi.Collect(newModel(t, srv, p).Generate(t.Context(), &model.Request{Contents: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}}, stream))
		if err != nil {
			t.Fatalf("stream=%v: %v", stream, err)
		}
		if n := len(srv.Requests()); n != 2 || len(resps) == 0 {
			t.Errorf("stream=%v: requests = %d, responses = %d", stream, n, len(resps))
		}
	}
}

// TestThinkingToReasoningEffort checks the thinking config a planner sets
// becomes reasoning_effort on the wire.
func TestThinkingToReasoningEffort(t *testing.T) {
	for _, tc := range []struct {
		cfg  *genai.ThinkingConfig
		want string
	}{
		{&genai.ThinkingConfig{ThinkingLevel: genai.ThinkingLevelLow}, `"reasoning_effort":"low"`},
		{&genai.ThinkingConfig{ThinkingLevel: genai.ThinkingLevelMedium}, `"reasoning_effort":"medium"`},
		{&genai.ThinkingConfig{ThinkingBudget: ptr[int32](1024)}, `"reasoning_effort":"low"`},
		{&genai.ThinkingConfig{ThinkingBudget: ptr[int32](32000)}, `"reasoning_effort":"high"`},
		{&genai.ThinkingConfig{ThinkingBudget: ptr[int32](0)}, `"reasoning_effort":"minimal"`},
		{&genai.ThinkingConfig{IncludeThoughts: true}, ""},
	} {
		srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/text.json", false))
		req := &model.Request{Contents: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)},
			Config: &genai.GenerateContentConfig{ThinkingConfig: tc.cfg}}
		if _, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), req, false)); err != nil {
			t.Fatal(err)
		}
		body := string(srv.Requests()[0].Body)
		if tc.want == "" && strings.Contains(body, "reasoning_effort") || tc.want != "" && !strings.Contains(body, tc.want) {
			t.Errorf("%+v: body %s, want %q", tc.cfg, body, tc.want)
		}
	}
}

// TestWebSearchCitations checks that the URL citations of a web-search
// answer become grounding metadata: one chunk per page, one support per
// cited span (indices count characters, not bytes).
func TestWebSearchCitations(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/web_search.json", false))
	req := &model.Request{Contents: []*genai.Content{genai.NewContentFromText("weather?", genai.RoleUser)},
		Config: &genai.GenerateContentConfig{Tools: []*genai.Tool{{GoogleSearch: &genai.GoogleSearch{}}}}}
	resps, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), req, false))
	if err != nil {
		t.Fatal(err)
	}
	g := resps[0].GroundingMetadata
	if g == nil || len(g.GroundingChunks) != 1 || g.GroundingChunks[0].Web.URI != "https://example.com/paris" || len(g.GroundingSupports) != 2 {
		t.Fatalf("grounding = %+v", g)
	}
	if s := g.GroundingSupports[0].Segment.Text; s != "sunny in Paris." {
		t.Errorf("first cited span = %q", s)
	}
	if s := g.GroundingSupports[1].Segment.Text; s != "Ça va" {
		t.Errorf("second cited span = %q", s)
	}
}

// TestUnsupportedBuiltInTool checks that a built-in tool Chat Completions
// cannot run fails before anything is sent, naming the tool.
func TestUnsupportedBuiltInTool(t *testing.T) {
	srv := fakeapi.Start(t)
	req := &model.Request{Contents: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)},
		Config: &genai.GenerateContentConfig{Tools: []*genai.Tool{{URLContext: &genai.URLContext{}}}}}
	_, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), req, false))
	if !errors.Is(err, model.ErrUnsupportedContent) || !strings.Contains(err.Error(), "url_context") {
		t.Errorf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}
