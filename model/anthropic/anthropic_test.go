package anthropic_test

import (
	"errors"
	"flag"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/anthropic"
	"github.com/loomkit/loom/model/internal/fakeapi"
	"github.com/loomkit/loom/model/retry"
)

var update = flag.Bool("update", false, "rewrite golden request files")

func newModel(t *testing.T, srv *fakeapi.Server, p *retry.Policy) *anthropic.Model {
	t.Helper()
	m, err := anthropic.New("claude-sonnet-4-5", &anthropic.Options{
		APIKey:     "test-key",
		BaseURL:    srv.URL,
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

func richRequest() *model.Request {
	return &model.Request{
		Contents: []*genai.Content{
			{Role: genai.RoleUser, Parts: []*genai.Part{
				{Text: "What is the weather in Paris and Tokyo? See the map."},
				{InlineData: &genai.Blob{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}},
			}},
			{Role: genai.RoleModel, Parts: []*genai.Part{
				{Text: "Two cities, two calls.", Thought: true, ThoughtSignature: []byte("sig-abc")},
				{Text: "unsigned thoughts are dropped", Thought: true},
				{Text: "Checking both."},
				{FunctionCall: &genai.FunctionCall{ID: "toolu_a", Name: "get_weather", Args: map[string]any{"city": "Paris"}}},
				{FunctionCall: &genai.FunctionCall{ID: "toolu_b", Name: "get_weather", Args: map[string]any{"city": "Tokyo"}}},
			}},
			{Role: genai.RoleUser, Parts: []*genai.Part{
				{FunctionResponse: &genai.FunctionResponse{ID: "toolu_a", Name: "get_weather", Response: map[string]any{"forecast": "sunny"}}},
				{FunctionResponse: &genai.FunctionResponse{ID: "toolu_b", Name: "get_weather", Response: map[string]any{"error": "station offline"}}},
			}},
		},
		Config: &genai.GenerateContentConfig{
			SystemInstruction: genai.NewContentFromText("You are a weather bot.", genai.RoleUser),
			Temperature:       ptr[float32](0.5),
			StopSequences:     []string{"END"},
			ThinkingConfig:    &genai.ThinkingConfig{ThinkingBudget: ptr[int32](1024)},
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
					ParametersJsonSchema: map[string]any{"type": "object", "properties": map[string]any{"tz": map[string]any{"type": "string"}}, "additionalProperties": false},
				},
			}}, {GoogleSearch: &genai.GoogleSearch{}}},
			ToolConfig: &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAny}},
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
			if _, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), richRequest(), stream)); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != http.MethodPost || r.Path != "/v1/messages" {
				t.Errorf("request = %s %s", r.Method, r.Path)
			}
			if got := r.Header.Get("X-Api-Key"); got != "test-key" {
				t.Errorf("x-api-key = %q", got)
			}
			if r.Header.Get("Anthropic-Version") == "" {
				t.Error("no anthropic-version header")
			}
			fakeapi.Golden(t, golden, fakeapi.Indent(r.Body), *update)
		})
	}
}

func TestDefaultMaxTokens(t *testing.T) {
	for _, tc := range []struct {
		opts int
		req  int32
		want string
	}{
		{0, 0, `"max_tokens":4096`},
		{1000, 0, `"max_tokens":1000`},
		{1000, 50, `"max_tokens":50`},
	} {
		srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/text.json", false))
		m, err := anthropic.New("claude-haiku-4-5", &anthropic.Options{APIKey: "k", BaseURL: srv.URL, HTTPClient: srv.Client(), MaxTokens: tc.opts})
		if err != nil {
			t.Fatal(err)
		}
		req := userText("hi")
		req.Config = &genai.GenerateContentConfig{MaxOutputTokens: tc.req}
		if _, err := fakeapi.Collect(m.Generate(t.Context(), req, false)); err != nil {
			t.Fatal(err)
		}
		if body := string(srv.Requests()[0].Body); !strings.Contains(body, tc.want) {
			t.Errorf("body %s lacks %s", body, tc.want)
		}
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
		t.Fatalf("got %d responses", len(resps))
	}
	r := resps[0]
	if r.Text() != "It is sunny in Paris." || r.Partial || r.FinishReason != genai.FinishReasonStop || r.ModelVersion != "claude-sonnet-4-5-20250929" {
		t.Errorf("response = %+v", r)
	}
	u := r.UsageMetadata
	if u == nil || u.PromptTokenCount != 42 || u.CandidatesTokenCount != 7 || u.CachedContentTokenCount != 10 || u.TotalTokenCount != 49 {
		t.Errorf("usage = %+v", u)
	}
}

func checkTurn(t *testing.T, r *model.Response) {
	t.Helper()
	if r.Partial || r.FinishReason != genai.FinishReasonStop {
		t.Errorf("Partial=%v FinishReason=%q", r.Partial, r.FinishReason)
	}
	parts := r.Content.Parts
	if len(parts) != 4 {
		t.Fatalf("got %d parts, want thinking, text and two calls: %+v", len(parts), parts)
	}
	if !parts[0].Thought || parts[0].Text != "Two cities, two calls." || string(parts[0].ThoughtSignature) != "sig-abc" {
		t.Errorf("thinking part = %+v", parts[0])
	}
	if parts[1].Text != "Checking both." || parts[1].Thought {
		t.Errorf("text part = %+v", parts[1])
	}
	for i, w := range []struct{ id, city string }{{"toolu_a", "Paris"}, {"toolu_b", "Tokyo"}} {
		c := parts[2+i].FunctionCall
		if c == nil || c.ID != w.id || c.Name != "get_weather" || c.Args["city"] != w.city {
			t.Errorf("call %d = %+v", i, c)
		}
	}
}

func TestParallelToolUseAndThinking(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/tool_use.json", false))
	resps, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), userText("weather?"), false))
	if err != nil {
		t.Fatal(err)
	}
	checkTurn(t, resps[0])
}

func TestStopReasons(t *testing.T) {
	for _, tc := range []struct {
		file      string
		finish    genai.FinishReason
		errorCode string
	}{
		{"testdata/refusal.json", genai.FinishReasonSafety, "REFUSAL"},
		{"testdata/max_tokens.json", genai.FinishReasonMaxTokens, ""},
	} {
		srv := fakeapi.Start(t, fakeapi.File(t, 200, tc.file, false))
		resps, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), userText("hi"), false))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if r := resps[0]; r.FinishReason != tc.finish || r.ErrorCode != tc.errorCode {
			t.Errorf("%s: FinishReason=%q ErrorCode=%q", tc.file, r.FinishReason, r.ErrorCode)
		}
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
	if u := final.UsageMetadata; u == nil || u.PromptTokenCount != 30 || u.CandidatesTokenCount != 7 {
		t.Errorf("usage = %+v", u)
	}
}

func TestStreamToolInputSplitAcrossChunks(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/stream_tools.sse", true))
	resps, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), userText("weather?"), true))
	if err != nil {
		t.Fatal(err)
	}
	// Two thinking deltas and one text delta are partial; then the turn.
	if len(resps) != 4 {
		t.Fatalf("got %d responses, want 4", len(resps))
	}
	if !resps[0].Partial || !resps[0].Content.Parts[0].Thought {
		t.Errorf("first partial = %+v", resps[0])
	}
	checkTurn(t, resps[3])
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
		t.Error("want the partial chunks that arrived before the cut")
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

func apiError(status int, typ, msg string) fakeapi.Reply {
	return fakeapi.JSON(status, `{"type":"error","error":{"type":"`+typ+`","message":"`+msg+`"}}`)
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	for _, tc := range []struct {
		status int
		typ    string
	}{
		{400, "invalid_request_error"},
		{401, "authentication_error"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			srv := fakeapi.Start(t, apiError(tc.status, tc.typ, "nope"))
			var clock fakeapi.Clock
			_, err := fakeapi.Collect(newModel(t, srv, clock.Policy(4)).Generate(t.Context(), userText("hi"), false))
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want *model.Error", err)
			}
			if me.StatusCode != tc.status || me.Code != tc.typ || me.Message != "nope" || me.Retryable || me.Provider != "anthropic" {
				t.Errorf("error = %+v", me)
			}
			if n := len(srv.Requests()); n != 1 || len(clock.Waits()) != 0 {
				t.Errorf("requests = %d, waits = %v; want 1 and none", n, clock.Waits())
			}
		})
	}
}

// 429 with Retry-After, 529 overloaded, an overloaded error event at the
// start of a stream: each is retried, and the stream finally succeeds.
func TestRetries(t *testing.T) {
	limited := apiError(429, "rate_limit_error", "slow down")
	limited.Header = http.Header{"Retry-After": {"2"}}
	overloaded := apiError(529, "overloaded_error", "Overloaded")
	srv := fakeapi.Start(t, limited, overloaded,
		fakeapi.File(t, 200, "testdata/stream_overloaded.sse", true),
		fakeapi.File(t, 200, "testdata/stream_text.sse", true))
	var clock fakeapi.Clock
	resps, err := fakeapi.Collect(newModel(t, srv, clock.Policy(5)).Generate(t.Context(), userText("hi"), true))
	if err != nil {
		t.Fatal(err)
	}
	if final := resps[len(resps)-1]; final.Partial || final.Text() != "It is sunny in Paris." {
		t.Errorf("final = %+v", final)
	}
	want := []time.Duration{2 * time.Second, 200 * time.Millisecond, 400 * time.Millisecond}
	got := clock.Waits()
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("waits = %v, want %v", got, want)
	}
	if n := len(srv.Requests()); n != 4 {
		t.Errorf("requests = %d, want 4", n)
	}
}

func TestOverloadedExhaustsRetries(t *testing.T) {
	o := apiError(529, "overloaded_error", "Overloaded")
	i := apiError(500, "api_error", "Internal")
	srv := fakeapi.Start(t, o, i, o)
	var clock fakeapi.Clock
	_, err := fakeapi.Collect(newModel(t, srv, clock.Policy(3)).Generate(t.Context(), userText("hi"), false))
	var ex *retry.ExhaustedError
	var me *model.Error
	if !errors.As(err, &ex) || ex.Attempts != 3 || !errors.As(err, &me) || me.StatusCode != 529 || me.Code != "overloaded_error" {
		t.Fatalf("err = %v, want exhausted after 3 attempts with the last 529", err)
	}
	if !strings.Contains(err.Error(), "3 attempts") {
		t.Errorf("message %q lacks the attempt count", err)
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

func TestUnsupportedPart(t *testing.T) {
	m, err := anthropic.New("claude-haiku-4-5", nil)
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Contents: []*genai.Content{{Role: genai.RoleUser, Parts: []*genai.Part{{InlineData: &genai.Blob{MIMEType: "audio/wav", Data: []byte{1}}}}}}}
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

// TestThinkingLevelToBudget checks that a thinking level, which Anthropic
// does not take, becomes an extended-thinking budget, and that a config
// without a budget or level leaves thinking off.
func TestThinkingLevelToBudget(t *testing.T) {
	for _, tc := range []struct {
		cfg  *genai.ThinkingConfig
		want string
	}{
		{&genai.ThinkingConfig{ThinkingLevel: genai.ThinkingLevelMedium}, `"thinking":{"budget_tokens":4096,"type":"enabled"}`},
		{&genai.ThinkingConfig{ThinkingLevel: genai.ThinkingLevelLow}, `"thinking":{"budget_tokens":1024,"type":"enabled"}`},
		{&genai.ThinkingConfig{IncludeThoughts: true}, ""},
		{&genai.ThinkingConfig{ThinkingBudget: ptr[int32](0)}, ""},
	} {
		srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/text.json", false))
		req := userText("hi")
		req.Config = &genai.GenerateContentConfig{ThinkingConfig: tc.cfg, MaxOutputTokens: 20000}
		if _, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), req, false)); err != nil {
			t.Fatal(err)
		}
		body := string(fakeapi.Indent(srv.Requests()[0].Body))
		compact := strings.Join(strings.Fields(body), "")
		if tc.want == "" && strings.Contains(compact, `"thinking"`) || tc.want != "" && !strings.Contains(compact, tc.want) {
			t.Errorf("%+v: body %s, want %q", tc.cfg, compact, tc.want)
		}
	}
}

// TestWebSearchGrounding checks that a web search Anthropic ran on its own
// is reported as grounding metadata (the query and the pages found), with
// and without streaming, and that the answer text is unchanged.
func TestWebSearchGrounding(t *testing.T) {
	for _, stream := range []bool{false, true} {
		reply := fakeapi.File(t, 200, "testdata/web_search.json", false)
		if stream {
			reply = fakeapi.File(t, 200, "testdata/stream_web_search.sse", true)
		}
		srv := fakeapi.Start(t, reply)
		req := userText("weather in Paris?")
		req.Config = &genai.GenerateContentConfig{Tools: []*genai.Tool{{GoogleSearch: &genai.GoogleSearch{}}}}
		resps, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), req, stream))
		if err != nil {
			t.Fatal(err)
		}
		r := resps[len(resps)-1]
		g := r.GroundingMetadata
		if r.Text() != "It is sunny in Paris." || g == nil || len(g.WebSearchQueries) != 1 || g.WebSearchQueries[0] != "weather Paris today" ||
			len(g.GroundingChunks) == 0 || g.GroundingChunks[0].Web.URI != "https://example.com/paris" || g.GroundingChunks[0].Web.Title != "Paris forecast" {
			t.Errorf("stream=%v: text %q, grounding %+v", stream, r.Text(), g)
		}
	}
}

// TestUnsupportedBuiltInTool checks that a built-in tool Anthropic cannot
// run fails before anything is sent, naming the tool.
func TestUnsupportedBuiltInTool(t *testing.T) {
	srv := fakeapi.Start(t)
	for _, gt := range []*genai.Tool{{URLContext: &genai.URLContext{}}, {CodeExecution: &genai.ToolCodeExecution{}}} {
		req := userText("hi")
		req.Config = &genai.GenerateContentConfig{Tools: []*genai.Tool{gt}}
		_, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), req, false))
		if !errors.Is(err, model.ErrUnsupportedContent) || !(strings.Contains(err.Error(), "url_context") || strings.Contains(err.Error(), "code_execution")) {
			t.Errorf("err = %v", err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// TestPDFDocument checks that a PDF the model should see (an uploaded file
// or a loaded artifact) travels as a document block.
func TestPDFDocument(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/text.json", false))
	req := &model.Request{Contents: []*genai.Content{{Role: genai.RoleUser, Parts: []*genai.Part{
		{Text: "summarize"}, {InlineData: &genai.Blob{MIMEType: "application/pdf", Data: []byte("%PDF-1.4")}}}}}}
	if _, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), req, false)); err != nil {
		t.Fatal(err)
	}
	body := strings.Join(strings.Fields(string(fakeapi.Indent(srv.Requests()[0].Body))), "")
	if !strings.Contains(body, `{"source":{"data":"JVBERi0xLjQ=","media_type":"application/pdf","type":"base64"},"type":"document"}`) {
		t.Errorf("body %s", body)
	}
}

// TestPromptCachingGolden checks the cache breakpoints on the wire: the
// last tool, the last system block and the last block of the last
// message carry cache_control with the TTL; and that cache reads come back
// as cached tokens in the usage metadata.
func TestPromptCachingGolden(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/text.json", false))
	m, err := anthropic.New("claude-sonnet-4-5", &anthropic.Options{APIKey: "test-key", BaseURL: srv.URL, HTTPClient: srv.Client(),
		PromptCaching: true, PromptCacheTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	resps, err := fakeapi.Collect(m.Generate(t.Context(), richRequest(), false))
	if err != nil {
		t.Fatal(err)
	}
	body := fakeapi.Indent(srv.Requests()[0].Body)
	fakeapi.Golden(t, "testdata/request_cache.golden.json", body, *update)
	if n := strings.Count(string(body), `"cache_control"`); n != 3 {
		t.Errorf("%d cache breakpoints, want 3", n)
	}
	if u := resps[0].UsageMetadata; u == nil || u.CachedContentTokenCount != 10 || u.PromptTokenCount != 42 {
		t.Errorf("usage = %+v", u)
	}
}
