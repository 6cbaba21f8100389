// Package anthropic adapts Anthropic's Messages API to [model.LLM].
//
// # Mapping
//
// The system instruction becomes the system prompt; user and model contents
// become user and assistant turns. Images travel as base64 image blocks,
// PDFs as base64 document blocks.
// Function declarations become tools with an input_schema; model function
// calls are tool_use blocks (ids kept) and function responses are
// tool_result blocks; a function response's media (genai
// FunctionResponse.Parts) join its tool_result as image blocks (JPEG, PNG,
// GIF, WebP inline, or any image by http(s) URL) and document blocks (PDF
// inline or by URL, plain text); other media fail with
// model.ErrUnsupportedContent. Thinking blocks become thought parts whose
// ThoughtSignature holds Anthropic's signature, so they can be sent back
// unchanged in the next turn. A genai GoogleSearch tool becomes Anthropic's
// web_search server tool; the searches it runs and the pages it finds come
// back as grounding metadata. Other built-in tools are rejected with
// model.ErrUnsupportedContent. A thinking config becomes extended thinking
// with its budget (a thinking level picks a budget). Stop reasons map to genai finish reasons
// (end_turn and tool_use: STOP; max_tokens: MAX_TOKENS; refusal: SAFETY with
// ErrorCode "REFUSAL").
//
// # Streaming
//
// With streaming, text_delta and thinking_delta events are yielded as
// partial responses; input_json_delta fragments are accumulated per content
// block; message_stop yields one aggregated, non-partial response. A stream
// that ends before message_stop yields an error and no final response.
//
// # Retries
//
// The SDK's retries are off; a [retry.Policy] (Options.Retry) retries 408,
// 429, 5xx and 529 "overloaded" before the first chunk, honouring
// Retry-After.
package anthropic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/internal/adapter"
	"github.com/loomkit/loom/model/retry"
)

const provider = "anthropic"

// DefaultMaxTokens is the output limit sent when the request sets none; the
// Messages API requires one.
const DefaultMaxTokens = 4096

// Options configures a [Model]. The zero value talks to Anthropic's API
// without a key (which it rejects with 401).
type Options struct {
	// APIKey is sent as x-api-key.
	APIKey string
	// BaseURL overrides the API root, for a proxy or a test server.
	BaseURL string
	// Header holds extra headers sent with every request (for example
	// "anthropic-beta").
	Header http.Header
	// HTTPClient sends the requests; nil means the SDK's default client.
	HTTPClient *http.Client
	// MaxTokens is the output limit when the request's MaxOutputTokens is
	// zero. Zero means DefaultMaxTokens.
	MaxTokens int
	// Retry is the retry policy; nil means the default retry.Policy.
	Retry *retry.Policy
	// PromptCaching marks cache breakpoints (cache_control) at the end of
	// the tools, of the system prompt and of the last message, so that
	// Anthropic caches the stable prefix of each request and later
	// requests read it from the cache. Cache reads and writes are reported
	// in the usage metadata (CachedContentTokenCount counts reads).
	PromptCaching bool
	// PromptCacheTTL is the lifetime of cache entries: up to five minutes
	// (the default) is sent as "5m", anything longer as "1h".
	PromptCacheTTL time.Duration
	// Now returns the current time (for Retry-After dates); nil means
	// time.Now.
	Now func() time.Time
}

// Model is a Claude model. It is safe for concurrent use.
type Model struct {
	cacheTTL  sdk.CacheControlEphemeralTTL // empty: no prompt caching
	name      string
	client    sdk.Client
	maxTokens int64
	retry     *retry.Policy
	now       func() time.Time
}

var _ model.LLM = (*Model)(nil)

// New returns a model named modelName, for example "claude-sonnet-4-5".
func New(modelName string, opts *Options) (*Model, error) {
	if modelName == "" {
		return nil, errors.New("anthropic: empty model name")
	}
	if opts == nil {
		opts = &Options{}
	}
	ro := []option.RequestOption{option.WithMaxRetries(0), option.WithAPIKey(opts.APIKey)}
	if opts.BaseURL != "" {
		ro = append(ro, option.WithBaseURL(opts.BaseURL))
	}
	if opts.HTTPClient != nil {
		ro = append(ro, option.WithHTTPClient(opts.HTTPClient))
	}
	for k, vs := range opts.Header {
		for _, v := range vs {
			ro = append(ro, option.WithHeaderAdd(k, v))
		}
	}
	maxTokens := int64(opts.MaxTokens)
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	m := &Model{name: modelName, client: sdk.NewClient(ro...), maxTokens: maxTokens, retry: opts.Retry, now: now}
	if opts.PromptCaching {
		m.cacheTTL = sdk.CacheControlEphemeralTTLTTL5m
		if opts.PromptCacheTTL > 5*time.Minute {
			m.cacheTTL = sdk.CacheControlEphemeralTTLTTL1h
		}
	}
	return m, nil
}

// Name returns the model name.
func (m *Model) Name() string { return m.name }

// Generate sends req as one Messages call; see the package documentation for
// the mapping and streaming behaviour.
func (m *Model) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	params, err := m.params(req)
	if err != nil {
		return func(yield func(*model.Response, error) bool) { yield(nil, err) }
	}
	return m.retry.Stream(ctx, provider, func(ctx context.Context) iter.Seq2[*model.Response, error] {
		if stream {
			return m.streamOnce(ctx, params)
		}
		return func(yield func(*model.Response, error) bool) {
			msg, err := m.client.Messages.New(ctx, params)
			if err != nil {
				yield(nil, m.convertError(err))
				return
			}
			yield(fromMessage(msg), nil)
		}
	})
}

func (m *Model) params(req *model.Request) (sdk.MessageNewParams, error) {
	var p sdk.MessageNewParams
	if req == nil {
		req = &model.Request{}
	}
	p.Model = sdk.Model(m.name)
	if req.Model != "" {
		p.Model = sdk.Model(req.Model)
	}
	cfg := req.Config
	if cfg == nil {
		cfg = &genai.GenerateContentConfig{}
	}
	p.MaxTokens = m.maxTokens
	if cfg.MaxOutputTokens > 0 {
		p.MaxTokens = int64(cfg.MaxOutputTokens)
	}
	if sc := cfg.SystemInstruction; sc != nil {
		for _, part := range sc.Parts {
			if part != nil && part.Text != "" && !part.Thought {
				p.System = append(p.System, sdk.TextBlockParam{Text: part.Text})
			}
		}
	}
	for _, c := range req.Contents {
		msg, ok, err := message(c)
		if err != nil {
			return p, err
		}
		if ok {
			p.Messages = append(p.Messages, msg)
		}
	}
	if err := tools(&p, cfg); err != nil {
		return p, err
	}
	if cfg.Temperature != nil {
		p.Temperature = param.NewOpt(float64(*cfg.Temperature))
	}
	if cfg.TopP != nil {
		p.TopP = param.NewOpt(float64(*cfg.TopP))
	}
	if cfg.TopK != nil {
		p.TopK = param.NewOpt(int64(*cfg.TopK))
	}
	p.StopSequences = cfg.StopSequences
	if budget := adapter.ThinkingBudget(cfg.ThinkingConfig); budget > 0 {
		p.Thinking.OfEnabled = &sdk.ThinkingConfigEnabledParam{BudgetTokens: budget}
	}
	if schema := adapter.Schema(cfg.ResponseSchema, cfg.ResponseJsonSchema); schema != nil {
		p.OutputConfig.Format = sdk.JSONOutputFormatParam{Schema: schema}
	}
	if m.cacheTTL != "" {
		m.cacheBreakpoints(&p)
	}
	return p, nil
}

// tools sets the tools of p, and how the model may call them, from those
// of cfg: function declarations as tools, Google Search as web_search; any
// other built-in tool is refused.
func tools(p *sdk.MessageNewParams, cfg *genai.GenerateContentConfig) error {
	for _, t := range cfg.Tools {
		if t == nil {
			continue
		}
		switch name := adapter.BuiltInToolName(t); name {
		case "":
		case "google_search":
			p.Tools = append(p.Tools, sdk.ToolUnionParam{OfWebSearchTool20250305: &sdk.WebSearchTool20250305Param{}})
			continue
		default:
			return fmt.Errorf("anthropic: %w: built-in tool %s cannot run on Anthropic models (google_search runs as web_search)",
				model.ErrUnsupportedContent, name)
		}
		for _, d := range t.FunctionDeclarations {
			if d != nil {
				p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tool(d)})
			}
		}
	}
	if tc := cfg.ToolConfig; tc != nil && tc.FunctionCallingConfig != nil && len(p.Tools) > 0 {
		fc := tc.FunctionCallingConfig
		switch fc.Mode {
		case genai.FunctionCallingConfigModeAuto:
			p.ToolChoice.OfAuto = &sdk.ToolChoiceAutoParam{}
		case genai.FunctionCallingConfigModeNone:
			p.ToolChoice.OfNone = &sdk.ToolChoiceNoneParam{}
		case genai.FunctionCallingConfigModeAny:
			if len(fc.AllowedFunctionNames) == 1 {
				p.ToolChoice.OfTool = &sdk.ToolChoiceToolParam{Name: fc.AllowedFunctionNames[0]}
			} else {
				p.ToolChoice.OfAny = &sdk.ToolChoiceAnyParam{}
			}
		}
	}
	return nil
}

// cacheBreakpoints marks the end of the tools, of the system prompt and of
// the last message as cache breakpoints: Anthropic caches the request's
// prefix up to each, in that order (tools, system, messages).
func (m *Model) cacheBreakpoints(p *sdk.MessageNewParams) {
	mark := func(cc *sdk.CacheControlEphemeralParam) {
		if cc != nil {
			*cc = sdk.CacheControlEphemeralParam{TTL: m.cacheTTL}
		}
	}
	if n := len(p.Tools); n > 0 {
		mark(p.Tools[n-1].GetCacheControl())
	}
	if n := len(p.System); n > 0 {
		mark(&p.System[n-1].CacheControl)
	}
	if n := len(p.Messages); n > 0 {
		if blocks := p.Messages[n-1].Content; len(blocks) > 0 {
			mark(blocks[len(blocks)-1].GetCacheControl())
		}
	}
}

func tool(d *genai.FunctionDeclaration) *sdk.ToolParam {
	schema := adapter.Parameters(d)
	in := sdk.ToolInputSchemaParam{Properties: schema["properties"]}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				in.Required = append(in.Required, s)
			}
		}
	} else if req, ok := schema["required"].([]string); ok {
		in.Required = req
	}
	for k, v := range schema {
		switch k {
		case "type", "properties", "required":
		default:
			if in.ExtraFields == nil {
				in.ExtraFields = map[string]any{}
			}
			in.ExtraFields[k] = v
		}
	}
	t := &sdk.ToolParam{Name: d.Name, InputSchema: in}
	if d.Description != "" {
		t.Description = param.NewOpt(d.Description)
	}
	return t
}

// message converts one genai content to a Messages API turn.
func message(c *genai.Content) (sdk.MessageParam, bool, error) {
	if c == nil {
		return sdk.MessageParam{}, false, nil
	}
	var blocks []sdk.ContentBlockParamUnion
	for _, p := range c.Parts {
		switch {
		case p == nil:
		case p.Thought:
			// Thinking can only be replayed with its signature.
			if c.Role == genai.RoleModel && len(p.ThoughtSignature) > 0 {
				blocks = append(blocks, sdk.NewThinkingBlock(string(p.ThoughtSignature), p.Text))
			}
		case p.FunctionCall != nil:
			args := p.FunctionCall.Args
			if args == nil {
				args = map[string]any{}
			}
			blocks = append(blocks, sdk.NewToolUseBlock(p.FunctionCall.ID, args, p.FunctionCall.Name))
		case p.FunctionResponse != nil:
			b, err := toolResult(p.FunctionResponse)
			if err != nil {
				return sdk.MessageParam{}, false, err
			}
			blocks = append(blocks, b)
		case p.Text != "":
			blocks = append(blocks, sdk.NewTextBlock(p.Text))
		case p.InlineData != nil && strings.HasPrefix(p.InlineData.MIMEType, "image/"):
			blocks = append(blocks, sdk.NewImageBlockBase64(p.InlineData.MIMEType, base64.StdEncoding.EncodeToString(p.InlineData.Data)))
		case p.InlineData != nil && p.InlineData.MIMEType == "application/pdf":
			blocks = append(blocks, sdk.NewDocumentBlock(sdk.Base64PDFSourceParam{Data: base64.StdEncoding.EncodeToString(p.InlineData.Data)}))
		case p.InlineData != nil && strings.HasPrefix(p.InlineData.MIMEType, "text/"):
			blocks = append(blocks, sdk.NewTextBlock(string(p.InlineData.Data)))
		case p.InlineData != nil:
			return sdk.MessageParam{}, false, fmt.Errorf("anthropic: %w: inline data of type %q", model.ErrUnsupportedContent, p.InlineData.MIMEType)
		case p.FileData != nil:
			return sdk.MessageParam{}, false, fmt.Errorf("anthropic: %w: file data of type %q", model.ErrUnsupportedContent, p.FileData.MIMEType)
		}
	}
	if len(blocks) == 0 {
		return sdk.MessageParam{}, false, nil
	}
	if c.Role == genai.RoleModel {
		return sdk.NewAssistantMessage(blocks...), true, nil
	}
	return sdk.NewUserMessage(blocks...), true, nil
}

// toolResult converts a function response to a tool_result block: its JSON
// as text, then its media (Parts) as image and document blocks, which are
// the media a tool result can hold. Other media are an
// model.ErrUnsupportedContent error, not silently dropped.
func toolResult(fr *genai.FunctionResponse) (sdk.ContentBlockParamUnion, error) {
	_, isErr := fr.Response["error"]
	isErr = isErr && len(fr.Response) == 1
	b := sdk.NewToolResultBlock(fr.ID, adapter.ResponseJSON(fr), isErr)
	for _, p := range fr.Parts {
		c, err := toolResultMedia(p)
		if err != nil {
			return b, fmt.Errorf("anthropic: %w: function response of %s: %v", model.ErrUnsupportedContent, fr.Name, err)
		}
		b.OfToolResult.Content = append(b.OfToolResult.Content, c)
	}
	return b, nil
}

// toolResultMedia converts one function response part.
func toolResultMedia(p *genai.FunctionResponsePart) (sdk.ToolResultBlockParamContentUnion, error) {
	var c sdk.ToolResultBlockParamContentUnion
	switch {
	case p == nil:
		return c, errors.New("a nil part")
	case p.InlineData != nil:
		d := p.InlineData
		data := base64.StdEncoding.EncodeToString(d.Data)
		switch {
		case anthropicImage(d.MIMEType):
			c.OfImage = &sdk.ImageBlockParam{Source: sdk.ImageBlockParamSourceUnion{
				OfBase64: &sdk.Base64ImageSourceParam{Data: data, MediaType: sdk.Base64ImageSourceMediaType(d.MIMEType)}}}
		case d.MIMEType == "application/pdf":
			c.OfDocument = &sdk.DocumentBlockParam{Source: sdk.DocumentBlockParamSourceUnion{
				OfBase64: &sdk.Base64PDFSourceParam{Data: data}}}
		case d.MIMEType == "text/plain":
			c.OfDocument = &sdk.DocumentBlockParam{Source: sdk.DocumentBlockParamSourceUnion{
				OfText: &sdk.PlainTextSourceParam{Data: string(d.Data)}}}
		default:
			return c, fmt.Errorf("inline data of type %q", d.MIMEType)
		}
		if d.DisplayName != "" && c.OfDocument != nil {
			c.OfDocument.Title = sdk.String(d.DisplayName)
		}
	case p.FileData != nil:
		f := p.FileData
		web := strings.HasPrefix(f.FileURI, "https://") || strings.HasPrefix(f.FileURI, "http://")
		switch {
		case web && strings.HasPrefix(f.MIMEType, "image/"):
			c.OfImage = &sdk.ImageBlockParam{Source: sdk.ImageBlockParamSourceUnion{OfURL: &sdk.URLImageSourceParam{URL: f.FileURI}}}
		case web && f.MIMEType == "application/pdf":
			c.OfDocument = &sdk.DocumentBlockParam{Source: sdk.DocumentBlockParamSourceUnion{OfURL: &sdk.URLPDFSourceParam{URL: f.FileURI}}}
		default:
			return c, fmt.Errorf("file data of type %q at %q (only http(s) images and PDFs)", f.MIMEType, f.FileURI)
		}
	default:
		return c, errors.New("a part with neither inline nor file data")
	}
	return c, nil
}

// anthropicImage reports whether the Messages API takes images of a MIME
// type.
func anthropicImage(mime string) bool {
	switch mime {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
		return true
	}
	return false
}

func finish(resp *model.Response, reason sdk.StopReason) {
	switch reason {
	case sdk.StopReasonEndTurn, sdk.StopReasonStopSequence, sdk.StopReasonToolUse, sdk.StopReasonPauseTurn:
		resp.FinishReason = genai.FinishReasonStop
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		resp.FinishReason = genai.FinishReasonMaxTokens
	case sdk.StopReasonRefusal:
		resp.FinishReason = genai.FinishReasonSafety
		resp.ErrorCode = "REFUSAL"
		resp.ErrorMessage = "the model declined to answer"
	case "":
	default:
		resp.FinishReason = genai.FinishReasonOther
	}
}

func usage(input, output, cacheRead, cacheWrite int64) *genai.GenerateContentResponseUsageMetadata {
	if input == 0 && output == 0 && cacheRead == 0 && cacheWrite == 0 {
		return nil
	}
	prompt := input + cacheRead + cacheWrite
	return &genai.GenerateContentResponseUsageMetadata{
		PromptTokenCount:        int32(prompt),
		CandidatesTokenCount:    int32(output),
		CachedContentTokenCount: int32(cacheRead),
		TotalTokenCount:         int32(prompt + output),
	}
}

func fromMessage(msg *sdk.Message) *model.Response {
	resp := &model.Response{
		ModelVersion:  string(msg.Model),
		UsageMetadata: usage(msg.Usage.InputTokens, msg.Usage.OutputTokens, msg.Usage.CacheReadInputTokens, msg.Usage.CacheCreationInputTokens),
	}
	content := &genai.Content{Role: genai.RoleModel}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			content.Parts = append(content.Parts, &genai.Part{Text: b.Text})
		case "thinking":
			content.Parts = append(content.Parts, &genai.Part{Text: b.Thinking, Thought: true, ThoughtSignature: []byte(b.Signature)})
		case "tool_use":
			args, err := adapter.Arguments(string(b.Input))
			if err != nil {
				malformed(resp, b.Name, err)
				continue
			}
			content.Parts = append(content.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: b.ID, Name: b.Name, Args: args}})
		case "server_tool_use":
			searchQuery(resp, b.Name, string(b.Input))
		case "web_search_tool_result":
			searchResults(resp, b.Content.OfWebSearchResultBlockArray)
		}
	}
	finish(resp, msg.StopReason)
	if len(content.Parts) > 0 {
		resp.Content = content
	}
	return resp
}

// searchQuery records the query of a web search the model ran on the
// response's grounding metadata.
func searchQuery(resp *model.Response, name, input string) {
	if name != "web_search" {
		return
	}
	args, err := adapter.Arguments(input)
	if err != nil {
		return
	}
	if q, ok := args["query"].(string); ok && q != "" {
		g := grounding(resp)
		g.WebSearchQueries = append(g.WebSearchQueries, q)
	}
}

// searchResults records the pages a web search found as grounding chunks.
func searchResults(resp *model.Response, results []sdk.WebSearchResultBlock) {
	for _, r := range results {
		if r.URL == "" {
			continue
		}
		g := grounding(resp)
		g.GroundingChunks = append(g.GroundingChunks, &genai.GroundingChunk{Web: &genai.GroundingChunkWeb{URI: r.URL, Title: r.Title}})
	}
}

func grounding(resp *model.Response) *genai.GroundingMetadata {
	if resp.GroundingMetadata == nil {
		resp.GroundingMetadata = &genai.GroundingMetadata{}
	}
	return resp.GroundingMetadata
}

func malformed(resp *model.Response, name string, err error) {
	resp.FinishReason = genai.FinishReasonMalformedFunctionCall
	resp.ErrorCode = string(genai.FinishReasonMalformedFunctionCall)
	resp.ErrorMessage = fmt.Sprintf("input of %s is not a JSON object: %v", name, err)
}

// block accumulates one streamed content block.
type block struct {
	kind    string // text, thinking, tool_use, server_tool_use, web_search_tool_result, or another type we pass over
	id      string
	name    string
	buf     strings.Builder
	sig     strings.Builder
	results []sdk.WebSearchResultBlock
}

func (m *Model) streamOnce(ctx context.Context, params sdk.MessageNewParams) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		s := m.client.Messages.NewStreaming(ctx, params)
		defer s.Close()
		st := streamState{blocks: map[int64]*block{}}
		for s.Next() {
			partial, err := st.add(s.Current())
			if err != nil {
				yield(nil, err)
				return
			}
			if partial != nil && !yield(partial, nil) {
				return
			}
		}
		if err := s.Err(); err != nil {
			yield(nil, m.convertError(err))
			return
		}
		if !st.done {
			yield(nil, &model.Error{Provider: provider, Code: "INCOMPLETE_STREAM", Message: "stream ended before message_stop", Retryable: true})
			return
		}
		yield(st.response(), nil)
	}
}

// streamState is what a stream of one message has said so far.
type streamState struct {
	blocks                  map[int64]*block // by index
	order                   []int64
	version                 string
	stop                    sdk.StopReason
	done                    bool
	in, out, cRead, cCreate int64 // token counts
}

// add takes in an event of the stream and returns the partial response
// it gives, if any.
func (st *streamState) add(ev sdk.MessageStreamEventUnion) (*model.Response, error) {
	switch ev.Type {
	case "message_start":
		st.version = string(ev.Message.Model)
		u := ev.Message.Usage
		st.in, st.out, st.cRead, st.cCreate = u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens
	case "content_block_start":
		cb := ev.ContentBlock
		b := &block{kind: cb.Type, id: cb.ID, name: cb.Name, results: cb.Content.OfWebSearchResultBlockArray}
		b.buf.WriteString(cb.Text)
		b.buf.WriteString(cb.Thinking)
		b.sig.WriteString(cb.Signature)
		if _, seen := st.blocks[ev.Index]; !seen {
			st.order = append(st.order, ev.Index)
		}
		st.blocks[ev.Index] = b
	case "content_block_delta":
		return st.delta(ev)
	case "message_delta":
		if ev.Delta.StopReason != "" {
			st.stop = ev.Delta.StopReason
		}
		u := ev.Usage
		if u.OutputTokens > 0 {
			st.out = u.OutputTokens
		}
		if u.InputTokens > 0 {
			st.in = u.InputTokens
		}
		if u.CacheReadInputTokens > 0 {
			st.cRead = u.CacheReadInputTokens
		}
		if u.CacheCreationInputTokens > 0 {
			st.cCreate = u.CacheCreationInputTokens
		}
	case "message_stop":
		st.done = true
	}
	return nil, nil
}

// delta adds a content block delta to its block and returns the partial
// response of its text, if it has any.
func (st *streamState) delta(ev sdk.MessageStreamEventUnion) (*model.Response, error) {
	b := st.blocks[ev.Index]
	if b == nil {
		return nil, &model.Error{Provider: provider, Code: "MALFORMED_STREAM", Message: fmt.Sprintf("delta for unknown content block %d", ev.Index)}
	}
	var part *genai.Part
	switch ev.Delta.Type {
	case "text_delta":
		b.buf.WriteString(ev.Delta.Text)
		part = &genai.Part{Text: ev.Delta.Text}
	case "thinking_delta":
		b.buf.WriteString(ev.Delta.Thinking)
		part = &genai.Part{Text: ev.Delta.Thinking, Thought: true}
	case "signature_delta":
		b.sig.WriteString(ev.Delta.Signature)
	case "input_json_delta":
		b.buf.WriteString(ev.Delta.PartialJSON)
	}
	if part == nil || part.Text == "" {
		return nil, nil
	}
	return &model.Response{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{part}}, Partial: true, ModelVersion: st.version}, nil
}

// response returns the complete response of a message that ended: its
// blocks in index order.
func (st *streamState) response() *model.Response {
	resp := &model.Response{ModelVersion: st.version, UsageMetadata: usage(st.in, st.out, st.cRead, st.cCreate)}
	slices.Sort(st.order)
	content := &genai.Content{Role: genai.RoleModel}
	for _, i := range st.order {
		b := st.blocks[i]
		switch b.kind {
		case "text":
			content.Parts = append(content.Parts, &genai.Part{Text: b.buf.String()})
		case "thinking":
			content.Parts = append(content.Parts, &genai.Part{Text: b.buf.String(), Thought: true, ThoughtSignature: []byte(b.sig.String())})
		case "tool_use":
			args, err := adapter.Arguments(b.buf.String())
			if err != nil {
				malformed(resp, b.name, err)
				continue
			}
			content.Parts = append(content.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: b.id, Name: b.name, Args: args}})
		case "server_tool_use":
			searchQuery(resp, b.name, b.buf.String())
		case "web_search_tool_result":
			searchResults(resp, b.results)
		}
	}
	finish(resp, st.stop)
	if len(content.Parts) > 0 {
		resp.Content = content
	}
	return resp
}

// apiErrorBody is Anthropic's error envelope.
type apiErrorBody struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// convertError maps SDK and transport errors to *model.Error. An error
// event inside a 200 stream carries the HTTP status of the stream, so an
// "overloaded_error" there is reported as 529.
func (m *Model) convertError(err error) error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		var body apiErrorBody
		_ = json.Unmarshal([]byte(apiErr.RawJSON()), &body)
		status := apiErr.StatusCode
		if status < 400 {
			switch body.Error.Type {
			case "overloaded_error":
				status = 529
			case "rate_limit_error":
				status = http.StatusTooManyRequests
			case "api_error":
				status = http.StatusInternalServerError
			}
		}
		me := &model.Error{
			Provider:   provider,
			StatusCode: status,
			Code:       body.Error.Type,
			Message:    body.Error.Message,
			Retryable:  retry.RetryableStatus(status),
		}
		if me.Message == "" {
			me.Message = http.StatusText(status)
		}
		if apiErr.Response != nil && apiErr.StatusCode >= 400 {
			return retry.WithDelay(me, retry.HeaderDelay(apiErr.Response.Header, m.now()))
		}
		return me
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) || strings.Contains(err.Error(), "parsing response json") {
		return &model.Error{Provider: provider, Code: "MALFORMED_RESPONSE", Message: err.Error()}
	}
	return retry.TransportError(provider, err)
}
