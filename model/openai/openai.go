// Package openai adapts OpenAI-compatible Chat Completions APIs to
// [model.LLM].
//
// The same adapter serves OpenAI itself and every server that speaks the
// Chat Completions wire format: Azure OpenAI (v1 endpoint), Ollama, vLLM,
// LM Studio and llama.cpp's server. Point [Options.BaseURL] at the server;
// the API key is optional for local servers.
//
// # Mapping
//
// The system instruction becomes a system message; user contents become user
// messages (images as data-URL image_url parts, WAV and MP3 as input_audio,
// PDFs as file parts); model contents become assistant messages whose
// function calls are tool_calls; function responses become tool messages
// carrying the tool_call_id. Tool messages hold only text, so the media of
// function responses (genai FunctionResponse.Parts) follow the tool
// messages in one user message, each response's media introduced by
// [MediaIntro]; media Chat Completions cannot take fail with
// model.ErrUnsupportedContent. Function
// declarations become function tools with their JSON Schema. A genai
// GoogleSearch tool sets web_search_options (for search models); URL
// citations in the answer become grounding metadata. Other built-in tools
// are rejected with model.ErrUnsupportedContent. A thinking config becomes
// reasoning_effort (its level, or its budget's size class). Reasoning text
// that some servers return (reasoning_content or reasoning) becomes thought
// parts. A refusal is reported on the response (ErrorCode "REFUSAL",
// FinishReason SAFETY), not as a Go error.
//
// # Streaming
//
// With streaming, text and reasoning deltas are yielded as partial
// responses; tool-call argument fragments are accumulated per index; when
// the stream finishes one aggregated, non-partial response carries the whole
// turn. A stream that breaks off yields an error and no final response.
//
// # Retries
//
// The SDK's own retries are off; calls go through a [retry.Policy]
// (Options.Retry), which retries 408/429/5xx and network timeouts before the
// first chunk and honours Retry-After.
package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"sort"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"
	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/internal/adapter"
	"github.com/loomkit/loom/model/retry"
)

const provider = "openai"

// DefaultBaseURL is OpenAI's API endpoint.
const DefaultBaseURL = "https://api.openai.com/v1"

// Options configures a [Model]. The zero value talks to OpenAI without an
// API key.
type Options struct {
	// APIKey is sent as a bearer token. Empty sends none, which local
	// servers accept.
	APIKey string
	// BaseURL is the API root, for example "http://localhost:11434/v1".
	// Empty means DefaultBaseURL.
	BaseURL string
	// Header holds extra headers sent with every request (for example
	// Azure's "api-key").
	Header http.Header
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Retry is the retry policy; nil means the default retry.Policy.
	Retry *retry.Policy
	// LegacyMaxTokens sends the output limit as max_tokens instead of
	// max_completion_tokens, for servers that only know the older field.
	LegacyMaxTokens bool
	// Now returns the current time (for Retry-After dates); nil means
	// time.Now.
	Now func() time.Time
}

// Model is a Chat Completions model. It is safe for concurrent use.
type Model struct {
	name   string
	client oai.Client
	retry  *retry.Policy
	legacy bool
	now    func() time.Time
}

var _ model.LLM = (*Model)(nil)

// New returns a model named modelName (for example "gpt-4o-mini" or
// "llama3.2") served at opts.BaseURL.
func New(modelName string, opts *Options) (*Model, error) {
	if modelName == "" {
		return nil, errors.New("openai: empty model name")
	}
	if opts == nil {
		opts = &Options{}
	}
	base := opts.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	ro := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithMaxRetries(0),
		// Ignore OPENAI_* environment defaults the SDK would read itself:
		// configuration comes from Options only.
		option.WithAPIKey(opts.APIKey),
	}
	if opts.HTTPClient != nil {
		ro = append(ro, option.WithHTTPClient(opts.HTTPClient))
	}
	for k, vs := range opts.Header {
		for _, v := range vs {
			ro = append(ro, option.WithHeaderAdd(k, v))
		}
	}
	if opts.APIKey == "" {
		ro = append(ro, option.WithHeaderDel("Authorization"))
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Model{
		name:   modelName,
		client: oai.NewClient(ro...),
		retry:  opts.Retry,
		legacy: opts.LegacyMaxTokens,
		now:    now,
	}, nil
}

// Name returns the model name.
func (m *Model) Name() string { return m.name }

// Generate sends req as one Chat Completions call; see the package
// documentation for the mapping and streaming behaviour.
func (m *Model) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	params, err := m.params(req)
	if err != nil {
		return func(yield func(*model.Response, error) bool) { yield(nil, err) }
	}
	if stream {
		params.StreamOptions = oai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)}
		return m.retry.Stream(ctx, provider, func(ctx context.Context) iter.Seq2[*model.Response, error] {
			return m.streamOnce(ctx, params)
		})
	}
	return m.retry.Stream(ctx, provider, func(ctx context.Context) iter.Seq2[*model.Response, error] {
		return func(yield func(*model.Response, error) bool) {
			cc, err := m.client.Chat.Completions.New(ctx, params)
			if err != nil {
				yield(nil, m.convertError(err))
				return
			}
			resp, err := fromCompletion(cc)
			if err != nil {
				yield(nil, err)
				return
			}
			yield(resp, nil)
		}
	})
}

func (m *Model) params(req *model.Request) (oai.ChatCompletionNewParams, error) {
	var p oai.ChatCompletionNewParams
	if req == nil {
		req = &model.Request{}
	}
	p.Model = shared.ChatModel(m.name)
	if req.Model != "" {
		p.Model = shared.ChatModel(req.Model)
	}
	cfg := req.Config
	if cfg == nil {
		cfg = &genai.GenerateContentConfig{}
	}
	if sys := model.Text(cfg.SystemInstruction, "\n"); sys != "" {
		p.Messages = append(p.Messages, oai.SystemMessage(sys))
	}
	for _, c := range req.Contents {
		msgs, err := messages(c)
		if err != nil {
			return p, err
		}
		p.Messages = append(p.Messages, msgs...)
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
	if cfg.MaxOutputTokens > 0 {
		if m.legacy {
			p.MaxTokens = param.NewOpt(int64(cfg.MaxOutputTokens))
		} else {
			p.MaxCompletionTokens = param.NewOpt(int64(cfg.MaxOutputTokens))
		}
	}
	if cfg.Seed != nil {
		p.Seed = param.NewOpt(int64(*cfg.Seed))
	}
	if cfg.PresencePenalty != nil {
		p.PresencePenalty = param.NewOpt(float64(*cfg.PresencePenalty))
	}
	if cfg.FrequencyPenalty != nil {
		p.FrequencyPenalty = param.NewOpt(float64(*cfg.FrequencyPenalty))
	}
	if len(cfg.StopSequences) > 0 {
		p.Stop.OfStringArray = cfg.StopSequences
	}
	if schema := adapter.Schema(cfg.ResponseSchema, cfg.ResponseJsonSchema); schema != nil {
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "response", Schema: schema},
		}
	} else if cfg.ResponseMIMEType == "application/json" {
		p.ResponseFormat.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
	}
	if effort := adapter.ReasoningEffort(cfg.ThinkingConfig); effort != "" {
		p.ReasoningEffort = shared.ReasoningEffort(effort)
	}
	return p, nil
}

// tools sets the tools of p, and how the model may call them, from those
// of cfg: function declarations as function tools, Google Search as web
// search; any other built-in tool is refused.
func tools(p *oai.ChatCompletionNewParams, cfg *genai.GenerateContentConfig) error {
	for _, t := range cfg.Tools {
		if t == nil {
			continue
		}
		switch name := adapter.BuiltInToolName(t); name {
		case "":
		case "google_search":
			// Chat Completions search models search when web_search_options
			// is present.
			p.WebSearchOptions = oai.ChatCompletionNewParamsWebSearchOptions{SearchContextSize: "medium"}
			continue
		default:
			return fmt.Errorf("openai: %w: built-in tool %s cannot run on Chat Completions models (google_search runs as web search)",
				model.ErrUnsupportedContent, name)
		}
		for _, d := range t.FunctionDeclarations {
			if d == nil {
				continue
			}
			fd := shared.FunctionDefinitionParam{Name: d.Name, Parameters: shared.FunctionParameters(adapter.Parameters(d))}
			if d.Description != "" {
				fd.Description = param.NewOpt(d.Description)
			}
			p.Tools = append(p.Tools, oai.ChatCompletionFunctionTool(fd))
		}
	}
	if tc := cfg.ToolConfig; tc != nil && tc.FunctionCallingConfig != nil && len(p.Tools) > 0 {
		fc := tc.FunctionCallingConfig
		switch fc.Mode {
		case genai.FunctionCallingConfigModeAuto:
			p.ToolChoice.OfAuto = param.NewOpt("auto")
		case genai.FunctionCallingConfigModeNone:
			p.ToolChoice.OfAuto = param.NewOpt("none")
		case genai.FunctionCallingConfigModeAny:
			if len(fc.AllowedFunctionNames) == 1 {
				p.ToolChoice.OfFunctionToolChoice = &oai.ChatCompletionNamedToolChoiceParam{
					Function: oai.ChatCompletionNamedToolChoiceFunctionParam{Name: fc.AllowedFunctionNames[0]},
				}
			} else {
				p.ToolChoice.OfAuto = param.NewOpt("required")
			}
		}
	}
	return nil
}

// messages converts one genai content into Chat Completions messages. A
// user content's function responses come first, as tool messages, because
// they must directly follow the assistant message that called the tools.
func messages(c *genai.Content) ([]oai.ChatCompletionMessageParamUnion, error) {
	if c == nil {
		return nil, nil
	}
	if c.Role == genai.RoleModel {
		return assistant(c)
	}
	var out []oai.ChatCompletionMessageParamUnion
	var parts, media []oai.ChatCompletionContentPartUnionParam
	for _, p := range c.Parts {
		switch {
		case p == nil || p.Thought:
		case p.FunctionResponse != nil:
			out = append(out, oai.ToolMessage(adapter.ResponseJSON(p.FunctionResponse), p.FunctionResponse.ID))
			var err error
			if media, err = responseMedia(media, p.FunctionResponse); err != nil {
				return nil, err
			}
		case p.Text != "":
			parts = append(parts, oai.TextContentPart(p.Text))
		case p.InlineData != nil:
			part, err := inlinePart(p.InlineData)
			if err != nil {
				return nil, err
			}
			parts = append(parts, part)
		case p.FileData != nil && strings.HasPrefix(p.FileData.MIMEType, "image/"):
			parts = append(parts, oai.ImageContentPart(oai.ChatCompletionContentPartImageImageURLParam{URL: p.FileData.FileURI}))
		case p.FileData != nil:
			return nil, fmt.Errorf("openai: %w: file data of type %q", model.ErrUnsupportedContent, p.FileData.MIMEType)
		}
	}
	// A tool message holds only text: the media of the function responses
	// follow all of them, in one user message of their own.
	parts = append(media, parts...)
	if len(parts) > 0 {
		if len(parts) == 1 && parts[0].OfText != nil {
			out = append(out, oai.UserMessage(parts[0].OfText.Text))
		} else {
			out = append(out, oai.UserMessage(parts))
		}
	}
	return out, nil
}

// MediaIntro introduces, in the user message that follows the tool
// messages, the media of one function response: Chat Completions tool
// messages hold only text. It is formatted with the function's name and the
// call id.
const MediaIntro = "Media returned by the function %s (call %s):"

// responseMedia appends the media of a function response (its Parts),
// after a text naming the call, as user message content parts: images
// (inline or by URL), WAV and MP3 audio, and PDF files. Other media are a
// model.ErrUnsupportedContent error.
func responseMedia(dst []oai.ChatCompletionContentPartUnionParam, fr *genai.FunctionResponse) ([]oai.ChatCompletionContentPartUnionParam, error) {
	if len(fr.Parts) == 0 {
		return dst, nil
	}
	dst = append(dst, oai.TextContentPart(fmt.Sprintf(MediaIntro, fr.Name, fr.ID)))
	for _, p := range fr.Parts {
		var part oai.ChatCompletionContentPartUnionParam
		var err error
		switch {
		case p != nil && p.InlineData != nil:
			part, err = inlinePart(&genai.Blob{MIMEType: p.InlineData.MIMEType, Data: p.InlineData.Data, DisplayName: p.InlineData.DisplayName})
		case p != nil && p.FileData != nil && strings.HasPrefix(p.FileData.MIMEType, "image/"):
			part = oai.ImageContentPart(oai.ChatCompletionContentPartImageImageURLParam{URL: p.FileData.FileURI})
		case p != nil && p.FileData != nil:
			err = fmt.Errorf("openai: %w: file data of type %q", model.ErrUnsupportedContent, p.FileData.MIMEType)
		default:
			err = fmt.Errorf("openai: %w: a function response part with neither inline nor file data", model.ErrUnsupportedContent)
		}
		if err != nil {
			return nil, fmt.Errorf("%w (function response of %s)", err, fr.Name)
		}
		dst = append(dst, part)
	}
	return dst, nil
}

func inlinePart(b *genai.Blob) (oai.ChatCompletionContentPartUnionParam, error) {
	switch {
	case b.MIMEType == "audio/wav" || b.MIMEType == "audio/x-wav" || b.MIMEType == "audio/mpeg" || b.MIMEType == "audio/mp3":
		format := "wav"
		if b.MIMEType == "audio/mpeg" || b.MIMEType == "audio/mp3" {
			format = "mp3"
		}
		return oai.InputAudioContentPart(oai.ChatCompletionContentPartInputAudioInputAudioParam{
			Data: base64.StdEncoding.EncodeToString(b.Data), Format: format}), nil
	case b.MIMEType == "application/pdf":
		name := b.DisplayName
		if name == "" {
			name = "file.pdf"
		}
		return oai.FileContentPart(oai.ChatCompletionContentPartFileFileParam{
			FileData: oai.String("data:application/pdf;base64," + base64.StdEncoding.EncodeToString(b.Data)),
			Filename: oai.String(name)}), nil
	case strings.HasPrefix(b.MIMEType, "image/"):
		url := "data:" + b.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(b.Data)
		return oai.ImageContentPart(oai.ChatCompletionContentPartImageImageURLParam{URL: url}), nil
	case strings.HasPrefix(b.MIMEType, "text/"):
		return oai.TextContentPart(string(b.Data)), nil
	}
	return oai.ChatCompletionContentPartUnionParam{}, fmt.Errorf("openai: %w: inline data of type %q", model.ErrUnsupportedContent, b.MIMEType)
}

func assistant(c *genai.Content) ([]oai.ChatCompletionMessageParamUnion, error) {
	var text strings.Builder
	var calls []oai.ChatCompletionMessageToolCallUnionParam
	for _, p := range c.Parts {
		switch {
		case p == nil || p.Thought:
			// Reasoning is not sent back: Chat Completions has no input
			// field for it and some servers reject one.
		case p.FunctionCall != nil:
			args, err := json.Marshal(p.FunctionCall.Args)
			if err != nil || p.FunctionCall.Args == nil {
				args = []byte("{}")
			}
			calls = append(calls, oai.ChatCompletionMessageToolCallUnionParam{OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
				ID:       p.FunctionCall.ID,
				Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: p.FunctionCall.Name, Arguments: string(args)},
			}})
		case p.Text != "":
			text.WriteString(p.Text)
		}
	}
	if text.Len() == 0 && len(calls) == 0 {
		return nil, nil
	}
	msg := oai.ChatCompletionAssistantMessageParam{ToolCalls: calls}
	if text.Len() > 0 {
		msg.Content.OfString = param.NewOpt(text.String())
	}
	return []oai.ChatCompletionMessageParamUnion{{OfAssistant: &msg}}, nil
}

// reasoning returns the reasoning text some OpenAI-compatible servers add
// to a message or delta (vLLM and DeepSeek: reasoning_content; Ollama and
// others: reasoning).
func reasoning(extra map[string]string) string {
	for _, k := range []string{"reasoning_content", "reasoning"} {
		raw, ok := extra[k]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal([]byte(raw), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

func finishReason(r string) genai.FinishReason {
	switch r {
	case "stop", "tool_calls", "function_call":
		return genai.FinishReasonStop
	case "length":
		return genai.FinishReasonMaxTokens
	case "content_filter":
		return genai.FinishReasonSafety
	case "":
		return ""
	}
	return genai.FinishReasonOther
}

func usage(u oai.CompletionUsage) *genai.GenerateContentResponseUsageMetadata {
	if u.TotalTokens == 0 && u.PromptTokens == 0 && u.CompletionTokens == 0 {
		return nil
	}
	reasoningTokens := u.CompletionTokensDetails.ReasoningTokens
	return &genai.GenerateContentResponseUsageMetadata{
		PromptTokenCount:        int32(u.PromptTokens),
		CandidatesTokenCount:    int32(u.CompletionTokens - reasoningTokens),
		ThoughtsTokenCount:      int32(reasoningTokens),
		CachedContentTokenCount: int32(u.PromptTokensDetails.CachedTokens),
		TotalTokenCount:         int32(u.TotalTokens),
	}
}

func extraFields[F interface{ Raw() string }](m map[string]F) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v.Raw()
	}
	return out
}

func fromCompletion(cc *oai.ChatCompletion) (*model.Response, error) {
	if len(cc.Choices) == 0 {
		return nil, &model.Error{Provider: provider, Code: "EMPTY_RESPONSE", Message: "response has no choices"}
	}
	ch := cc.Choices[0]
	msg := ch.Message
	resp := &model.Response{
		ModelVersion:  cc.Model,
		UsageMetadata: usage(cc.Usage),
		FinishReason:  finishReason(ch.FinishReason),
	}
	content := &genai.Content{Role: genai.RoleModel}
	if r := reasoning(extraFields(msg.JSON.ExtraFields)); r != "" {
		content.Parts = append(content.Parts, &genai.Part{Text: r, Thought: true})
	}
	if msg.Content != "" {
		content.Parts = append(content.Parts, &genai.Part{Text: msg.Content})
	}
	for _, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		args, err := adapter.Arguments(tc.Function.Arguments)
		if err != nil {
			resp.FinishReason = genai.FinishReasonMalformedFunctionCall
			resp.ErrorCode = string(genai.FinishReasonMalformedFunctionCall)
			resp.ErrorMessage = fmt.Sprintf("arguments of %s are not a JSON object: %v", tc.Function.Name, err)
			continue
		}
		content.Parts = append(content.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: tc.ID, Name: tc.Function.Name, Args: args}})
	}
	if msg.Refusal != "" {
		refuse(resp, msg.Refusal)
	}
	if len(content.Parts) > 0 {
		resp.Content = content
	}
	resp.GroundingMetadata = citations(msg.Annotations, msg.Content)
	return resp, nil
}

// citations turns the URL citations of a web-search answer into grounding
// metadata: one web chunk per distinct URL, and one support per citation
// for the text span it covers.
func citations(anns []oai.ChatCompletionMessageAnnotation, text string) *genai.GroundingMetadata {
	var g *genai.GroundingMetadata
	runes := []rune(text) // citation indices count characters
	index := map[string]int32{}
	for _, a := range anns {
		c := a.URLCitation
		if c.URL == "" {
			continue
		}
		if g == nil {
			g = &genai.GroundingMetadata{}
		}
		i, ok := index[c.URL]
		if !ok {
			i = int32(len(g.GroundingChunks))
			index[c.URL] = i
			g.GroundingChunks = append(g.GroundingChunks, &genai.GroundingChunk{Web: &genai.GroundingChunkWeb{URI: c.URL, Title: c.Title}})
		}
		seg := &genai.Segment{StartIndex: int32(c.StartIndex), EndIndex: int32(c.EndIndex)}
		if c.StartIndex >= 0 && c.StartIndex <= c.EndIndex && int(c.EndIndex) <= len(runes) {
			seg.Text = string(runes[c.StartIndex:c.EndIndex])
		}
		g.GroundingSupports = append(g.GroundingSupports, &genai.GroundingSupport{GroundingChunkIndices: []int32{i}, Segment: seg})
	}
	return g
}

func refuse(resp *model.Response, msg string) {
	resp.FinishReason = genai.FinishReasonSafety
	resp.ErrorCode = "REFUSAL"
	resp.ErrorMessage = msg
}

// toolCall accumulates one streamed tool call.
type toolCall struct {
	index int64
	id    string
	name  string
	args  strings.Builder
}

func (m *Model) streamOnce(ctx context.Context, params oai.ChatCompletionNewParams) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		s := m.client.Chat.Completions.NewStreaming(ctx, params)
		defer s.Close()
		st := streamState{calls: map[int64]*toolCall{}}
		for s.Next() {
			if partial := st.add(s.Current()); partial != nil && !yield(partial, nil) {
				return
			}
		}
		if err := s.Err(); err != nil {
			yield(nil, m.convertError(err))
			return
		}
		if st.finish == "" {
			yield(nil, &model.Error{Provider: provider, Code: "INCOMPLETE_STREAM", Message: "stream ended without a finish reason", Retryable: true})
			return
		}
		yield(st.response(), nil)
	}
}

// streamState is what the chunks of one streamed completion have said so
// far.
type streamState struct {
	agg     adapter.Aggregator
	calls   map[int64]*toolCall // by index
	refusal strings.Builder
	finish  string
	version string
	use     *genai.GenerateContentResponseUsageMetadata
}

// add takes in a chunk and returns the partial response of its text, if
// it has any.
func (st *streamState) add(chunk oai.ChatCompletionChunk) *model.Response {
	if chunk.Model != "" {
		st.version = chunk.Model
	}
	if u := usage(chunk.Usage); u != nil {
		st.use = u
	}
	if len(chunk.Choices) == 0 {
		return nil
	}
	ch := chunk.Choices[0]
	d := ch.Delta
	if ch.FinishReason != "" {
		st.finish = ch.FinishReason
	}
	var parts []*genai.Part
	if r := reasoning(extraFields(d.JSON.ExtraFields)); r != "" {
		st.agg.Text(r, true, nil)
		parts = append(parts, &genai.Part{Text: r, Thought: true})
	}
	if d.Content != "" {
		st.agg.Text(d.Content, false, nil)
		parts = append(parts, &genai.Part{Text: d.Content})
	}
	st.refusal.WriteString(d.Refusal)
	for _, tc := range d.ToolCalls {
		c := st.calls[tc.Index]
		if c == nil {
			c = &toolCall{index: tc.Index}
			st.calls[tc.Index] = c
		}
		if tc.ID != "" {
			c.id = tc.ID
		}
		if tc.Function.Name != "" {
			c.name = tc.Function.Name
		}
		c.args.WriteString(tc.Function.Arguments)
	}
	if len(parts) == 0 {
		return nil
	}
	return &model.Response{Content: &genai.Content{Role: genai.RoleModel, Parts: parts}, Partial: true, ModelVersion: st.version}
}

// response returns the complete response of a finished completion: its
// text and then its tool calls in index order.
func (st *streamState) response() *model.Response {
	resp := &model.Response{ModelVersion: st.version, UsageMetadata: st.use, FinishReason: finishReason(st.finish)}
	ordered := make([]*toolCall, 0, len(st.calls))
	for _, c := range st.calls {
		ordered = append(ordered, c)
	}
	sort.Slice(ordered, func(i, j int) bool { return ordered[i].index < ordered[j].index })
	for _, c := range ordered {
		args, err := adapter.Arguments(c.args.String())
		if err != nil {
			resp.FinishReason = genai.FinishReasonMalformedFunctionCall
			resp.ErrorCode = string(genai.FinishReasonMalformedFunctionCall)
			resp.ErrorMessage = fmt.Sprintf("arguments of %s are not a JSON object: %v", c.name, err)
			continue
		}
		st.agg.Part(&genai.Part{FunctionCall: &genai.FunctionCall{ID: c.id, Name: c.name, Args: args}})
	}
	if st.refusal.Len() > 0 {
		refuse(resp, st.refusal.String())
	}
	if !st.agg.Empty() {
		resp.Content = &genai.Content{Role: genai.RoleModel, Parts: st.agg.Parts()}
	}
	return resp
}

// convertError maps SDK and transport errors to *model.Error, attaching a
// Retry-After delay when the server sent one.
func (m *Model) convertError(err error) error {
	var apiErr *oai.Error
	if errors.As(err, &apiErr) {
		me := &model.Error{
			Provider:   provider,
			StatusCode: apiErr.StatusCode,
			Code:       apiErr.Code,
			Message:    apiErr.Message,
			Retryable:  retry.RetryableStatus(apiErr.StatusCode),
		}
		if me.Code == "" {
			me.Code = apiErr.Type
		}
		if me.Message == "" {
			me.Message = http.StatusText(apiErr.StatusCode)
			if raw := apiErr.RawJSON(); raw != "" {
				me.Message = raw
			}
		}
		if apiErr.Response != nil {
			return retry.WithDelay(me, retry.HeaderDelay(apiErr.Response.Header, m.now()))
		}
		return me
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return &model.Error{Provider: provider, Code: "STREAM_ERROR", Message: se.Message}
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	// The SDK reports an undecodable body with this prefix and no typed
	// error of its own.
	if errors.As(err, &syn) || errors.As(err, &typ) || strings.Contains(err.Error(), "parsing response json") {
		return &model.Error{Provider: provider, Code: "MALFORMED_RESPONSE", Message: err.Error()}
	}
	return retry.TransportError(provider, err)
}
