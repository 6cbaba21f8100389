// Package gemini adapts Google's Gemini API (and Gemini on Vertex AI) to
// [model.LLM], on top of google.golang.org/genai.
//
// Configure the backend with a genai.ClientConfig: an API key for the
// Gemini Developer API, or Backend: genai.BackendVertexAI with a project and
// location for Vertex AI. HTTPOptions.BaseURL points the adapter at another
// endpoint, such as a proxy or a local test server.
//
// # Mapping
//
// Requests are already in the genai vocabulary and pass through unchanged;
// a function response's media (FunctionResponse.Parts) are sent as the
// API's multimodal function response parts, which Gemini 3 models accept
// and earlier ones refuse with a 400 error the adapter returns as it is.
// The first candidate's content, finish reason, grounding and citation
// metadata and average log-probability, the usage metadata and the model
// version are copied onto the [model.Response]. A blocked prompt or a
// finish reason other than STOP or MAX_TOKENS also sets ErrorCode and
// ErrorMessage.
//
// # Streaming
//
// With streaming, every chunk is yielded as a partial response, and when the
// stream ends one aggregated, non-partial response carries the whole turn:
// consecutive text (and thought text) merged, function calls and other parts
// in order, the last finish reason and usage. A stream that breaks off
// yields an error and no final response.
//
// # Retries
//
// genai's own retries stay off (its RetryOptions are cleared); a
// [retry.Policy] (Options.Retry) retries 408, 429, 5xx, network failures,
// bodies cut short and attempts that exceed the policy's per-attempt
// Timeout (retry.DefaultTimeout unless set) before the first chunk,
// honouring the server's RetryInfo delay or else its Retry-After header.
package gemini

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/internal/adapter"
	"github.com/loomkit/loom/model/retry"
)

const provider = "gemini"

// Options holds the adapter's own settings; the zero value is the default.
type Options struct {
	// Retry is the retry policy; nil means the default retry.Policy.
	Retry *retry.Policy
	// Cache, if set, turns on context caching (see CacheOptions).
	Cache *CacheOptions
}

// Model is a Gemini model. It is safe for concurrent use.
type Model struct {
	name   string
	client *genai.Client
	retry  *retry.Policy
	cache  *cacheManager // nil without context caching
}

var _ model.LLM = (*Model)(nil)

// New returns the model modelName (for example "gemini-2.5-flash") on the
// backend described by cc. A nil cc uses genai's defaults, which read
// GOOGLE_API_KEY or GEMINI_API_KEY and the GOOGLE_GENAI_USE_VERTEXAI
// variables. opts may be nil.
func New(ctx context.Context, modelName string, cc *genai.ClientConfig, opts *Options) (*Model, error) {
	if modelName == "" {
		return nil, errors.New("gemini: empty model name")
	}
	var conf genai.ClientConfig
	if cc != nil {
		conf = *cc
	}
	// One retry policy only: ours.
	conf.HTTPOptions.RetryOptions = nil
	// Retry-After is read from responses by a transport wrapper; genai
	// reports only the status and body. A caller's client is copied, not
	// changed; a client genai creates (with credentials) is ours to wrap.
	own := conf.HTTPClient != nil
	if own {
		hc := *conf.HTTPClient
		hc.Transport = &headerTransport{next: hc.Transport}
		conf.HTTPClient = &hc
	}
	client, err := genai.NewClient(ctx, &conf)
	if err != nil {
		return nil, err
	}
	if hc := client.ClientConfig().HTTPClient; !own && hc != nil {
		hc.Transport = &headerTransport{next: hc.Transport}
	}
	if opts == nil {
		opts = &Options{}
	}
	m := &Model{name: strings.TrimPrefix(modelName, "gemini/"), client: client, retry: opts.Retry}
	if opts.Cache != nil {
		m.cache = newCacheManager(*opts.Cache, client)
	}
	return m, nil
}

// Name returns the model name.
func (m *Model) Name() string { return m.name }

// ToolsWithSchema implements model.ToolsWithSchema: Gemini 2 and later
// models on Vertex AI take function tools and a response schema together;
// the Gemini Developer API does not.
func (m *Model) ToolsWithSchema() bool {
	return m.client.ClientConfig().Backend == genai.BackendVertexAI && !strings.HasPrefix(m.name, "gemini-1")
}

// Generate sends req to the model; see the package documentation for the
// streaming behaviour.
func (m *Model) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	if req == nil {
		req = &model.Request{}
	}
	name := m.name
	if req.Model != "" {
		name = req.Model
	}
	cfg := config(req.Config)
	if m.cache == nil {
		return m.generate(ctx, name, req.Contents, cfg, stream)
	}
	return func(yield func(*model.Response, error) bool) {
		contents, ccfg := m.cache.apply(ctx, name, req.Contents, cfg)
		seq := m.generate(ctx, name, contents, ccfg, stream)
		if ccfg != nil && ccfg.CachedContent != "" && (cfg == nil || cfg.CachedContent == "") {
			seq = m.withCacheFallback(ctx, name, req, ccfg.CachedContent, contents, ccfg, stream)
		}
		for resp, err := range seq {
			if !yield(resp, err) {
				return
			}
		}
	}
}

// withCacheFallback sends a request that uses a cache the adapter made; if
// the API no longer knows the cache (it expired or was deleted elsewhere)
// before anything was yielded, the cache is forgotten and the request is
// sent again whole.
func (m *Model) withCacheFallback(ctx context.Context, name string, req *model.Request, cacheName string,
	contents []*genai.Content, cfg *genai.GenerateContentConfig, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		yielded := false
		for resp, err := range m.generate(ctx, name, contents, cfg, stream) {
			if err != nil && !yielded && cacheMissing(err) {
				m.cache.forget(cacheName)
				for resp, err := range m.generate(ctx, name, req.Contents, config(req.Config), stream) {
					if !yield(resp, err) {
						return
					}
				}
				return
			}
			yielded = true
			if !yield(resp, err) {
				return
			}
		}
	}
}

// cacheMissing reports an error about an unknown cached content.
func cacheMissing(err error) bool {
	var me *model.Error
	return errors.As(err, &me) && (me.StatusCode == http.StatusNotFound || me.StatusCode == http.StatusForbidden) &&
		strings.Contains(strings.ToLower(me.Message), "cache")
}

func (m *Model) generate(ctx context.Context, name string, contents []*genai.Content, cfg *genai.GenerateContentConfig, stream bool) iter.Seq2[*model.Response, error] {
	return m.retry.Stream(ctx, provider, func(ctx context.Context) iter.Seq2[*model.Response, error] {
		ra := new(retryAfter)
		ctx = context.WithValue(ctx, retryAfterKey{}, ra)
		if stream {
			return m.streamOnce(ctx, name, contents, cfg, ra)
		}
		return func(yield func(*model.Response, error) bool) {
			resp, err := m.client.Models.GenerateContent(ctx, name, contents, cfg)
			if err != nil {
				yield(nil, convertError(err, ra))
				return
			}
			yield(fromResponse(resp), nil)
		}
	})
}

// retryAfter holds the wait the last failed response of an attempt asked
// for in its Retry-After header.
type retryAfter struct{ d atomic.Int64 }

type retryAfterKey struct{}

// headerTransport records the Retry-After of failed responses in the
// request context's retryAfter.
type headerTransport struct{ next http.RoundTripper }

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	if err == nil && resp.StatusCode >= 400 {
		if ra, ok := req.Context().Value(retryAfterKey{}).(*retryAfter); ok {
			ra.d.Store(int64(retry.HeaderDelay(resp.Header, time.Now())))
		}
	}
	return resp, err
}

// config copies the caller's config so that the SDK's defaulting (it fills
// in the system instruction's role) never writes to shared request data.
func config(c *genai.GenerateContentConfig) *genai.GenerateContentConfig {
	if c == nil {
		return nil
	}
	cp := *c
	if c.SystemInstruction != nil {
		si := *c.SystemInstruction
		if si.Role == "" {
			si.Role = genai.RoleUser
		}
		cp.SystemInstruction = &si
	}
	return &cp
}

func fromResponse(r *genai.GenerateContentResponse) *model.Response {
	resp := &model.Response{UsageMetadata: r.UsageMetadata, ModelVersion: r.ModelVersion}
	if len(r.Candidates) == 0 {
		if pf := r.PromptFeedback; pf != nil && pf.BlockReason != "" {
			resp.ErrorCode = string(pf.BlockReason)
			resp.ErrorMessage = pf.BlockReasonMessage
			if resp.ErrorMessage == "" {
				resp.ErrorMessage = "the prompt was blocked"
			}
		}
		return resp
	}
	c := r.Candidates[0]
	resp.Content = c.Content
	if resp.Content != nil && resp.Content.Role == "" {
		resp.Content.Role = genai.RoleModel
	}
	resp.FinishReason = c.FinishReason
	resp.GroundingMetadata = c.GroundingMetadata
	resp.CitationMetadata = c.CitationMetadata
	resp.AvgLogprobs = c.AvgLogprobs
	resp.LogprobsResult = c.LogprobsResult
	switch c.FinishReason {
	case "", genai.FinishReasonUnspecified, genai.FinishReasonStop, genai.FinishReasonMaxTokens:
	default:
		resp.ErrorCode = string(c.FinishReason)
		resp.ErrorMessage = c.FinishMessage
	}
	return resp
}

func (m *Model) streamOnce(ctx context.Context, name string, contents []*genai.Content, cfg *genai.GenerateContentConfig, ra *retryAfter) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		var (
			agg  adapter.Aggregator
			last *model.Response
		)
		for chunk, err := range m.client.Models.GenerateContentStream(ctx, name, contents, cfg) {
			if err != nil {
				yield(nil, convertError(err, ra))
				return
			}
			r := fromResponse(chunk)
			if r.Content != nil {
				for _, p := range r.Content.Parts {
					switch {
					case p == nil:
					case p.Text != "" && p.FunctionCall == nil && p.InlineData == nil:
						agg.Text(p.Text, p.Thought, p.ThoughtSignature)
					default:
						agg.Part(p)
					}
				}
			}
			if last == nil {
				last = &model.Response{}
			}
			merge(last, r)
			r.Partial = true
			if !yield(r, nil) {
				return
			}
		}
		if last == nil || last.FinishReason == "" && last.ErrorCode == "" {
			yield(nil, &model.Error{Provider: provider, Code: "INCOMPLETE_STREAM", Message: "stream ended without a finish reason", Retryable: true})
			return
		}
		if !agg.Empty() {
			last.Content = &genai.Content{Role: genai.RoleModel, Parts: agg.Parts()}
		}
		yield(last, nil)
	}
}

// merge keeps the latest non-empty metadata of a stream on the final
// response; content is aggregated separately.
func merge(dst, r *model.Response) {
	if r.UsageMetadata != nil {
		dst.UsageMetadata = r.UsageMetadata
	}
	if r.ModelVersion != "" {
		dst.ModelVersion = r.ModelVersion
	}
	if r.FinishReason != "" {
		dst.FinishReason = r.FinishReason
	}
	if r.GroundingMetadata != nil {
		dst.GroundingMetadata = r.GroundingMetadata
	}
	if r.CitationMetadata != nil {
		dst.CitationMetadata = r.CitationMetadata
	}
	if r.AvgLogprobs != 0 {
		dst.AvgLogprobs = r.AvgLogprobs
	}
	if r.LogprobsResult != nil {
		dst.LogprobsResult = r.LogprobsResult
	}
	if r.ErrorCode != "" {
		dst.ErrorCode, dst.ErrorMessage = r.ErrorCode, r.ErrorMessage
	}
}

// convertError maps genai and transport errors to *model.Error. Google APIs
// send the wait they want in a google.rpc.RetryInfo detail, or else in a
// Retry-After header (recorded in ra).
func convertError(err error, ra *retryAfter) error {
	var apiErr genai.APIError
	var apiErrPtr *genai.APIError
	switch {
	case errors.As(err, &apiErr):
	case errors.As(err, &apiErrPtr):
		apiErr = *apiErrPtr
	default:
		if strings.Contains(err.Error(), "unmarshal") {
			return &model.Error{Provider: provider, Code: "MALFORMED_RESPONSE", Message: err.Error()}
		}
		return retry.TransportError(provider, err)
	}
	me := &model.Error{
		Provider:   provider,
		StatusCode: apiErr.Code,
		Code:       apiErr.Status,
		Message:    apiErr.Message,
		Retryable:  retry.RetryableStatus(apiErr.Code),
	}
	if me.Message == "" {
		me.Message = http.StatusText(apiErr.Code)
	}
	for _, d := range apiErr.Details {
		if t, _ := d["@type"].(string); !strings.HasSuffix(t, "google.rpc.RetryInfo") {
			continue
		}
		if s, ok := d["retryDelay"].(string); ok {
			if wait, err := time.ParseDuration(s); err == nil {
				return retry.WithDelay(me, wait)
			}
		}
	}
	return retry.WithDelay(me, time.Duration(ra.d.Load()))
}
