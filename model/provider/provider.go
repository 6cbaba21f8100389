// Package provider opens a model adapter by name, taking credentials and
// endpoints from the environment.
//
// Names choose the adapter:
//
//	gemini-2.5-flash, gemini/gemini-2.5-pro   Gemini API, or Vertex AI when
//	                                          GOOGLE_GENAI_USE_VERTEXAI=true
//	openai/gpt-4o-mini, gpt-4o, o3-mini       OpenAI Chat Completions
//	anthropic/claude-sonnet-4-5, claude-...   Anthropic Messages
//	ollama/llama3.2                           Ollama's OpenAI-compatible API
//
// Environment: GOOGLE_API_KEY or GEMINI_API_KEY; GOOGLE_GENAI_USE_VERTEXAI,
// GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION for Vertex AI;
// OPENAI_API_KEY and OPENAI_BASE_URL (any OpenAI-compatible server);
// ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL; OLLAMA_BASE_URL (default
// http://localhost:11434/v1, no key needed). [Options] override the key and
// base URL.
package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/anthropic"
	"github.com/loomkit/loom/model/gemini"
	"github.com/loomkit/loom/model/openai"
	"github.com/loomkit/loom/model/retry"
)

// Default model names, one per provider, used by [DefaultModel].
const (
	DefaultGemini    = "gemini-2.5-flash"
	DefaultOpenAI    = "openai/gpt-4o-mini"
	DefaultAnthropic = "anthropic/claude-sonnet-4-5"
)

// DefaultOllamaBaseURL is where Ollama serves its OpenAI-compatible API.
const DefaultOllamaBaseURL = "http://localhost:11434/v1"

// ErrUnknownModel is returned for a name no adapter claims.
var ErrUnknownModel = errors.New("provider: unknown model")

// ErrNoAPIKey is returned when a hosted provider's API key is missing.
var ErrNoAPIKey = errors.New("provider: no API key")

// Options override what Open reads from the environment. The zero value
// takes everything from the environment.
type Options struct {
	// APIKey overrides the provider's key variable.
	APIKey string
	// BaseURL overrides the provider's endpoint.
	BaseURL string
	// HTTPClient sends the requests; nil means the adapter's default.
	HTTPClient *http.Client
	// Retry is the retry policy; nil means the default retry.Policy.
	Retry *retry.Policy
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

func (o *Options) getenv(key string) string {
	if o != nil && o.Getenv != nil {
		return o.Getenv(key)
	}
	return os.Getenv(key)
}

func (o *Options) pick(override, envKey string) string {
	if override != "" {
		return override
	}
	return o.getenv(envKey)
}

// Open returns the model called name. See the package documentation for the
// names and variables it understands.
func Open(ctx context.Context, name string, opts *Options) (model.LLM, error) {
	if opts == nil {
		opts = &Options{}
	}
	family, id := split(name)
	switch family {
	case "gemini":
		return openGemini(ctx, id, opts)
	case "openai":
		key := opts.pick(opts.APIKey, "OPENAI_API_KEY")
		base := opts.pick(opts.BaseURL, "OPENAI_BASE_URL")
		if key == "" && base == "" {
			return nil, fmt.Errorf("%w: set OPENAI_API_KEY for %s (or OPENAI_BASE_URL for a local server)", ErrNoAPIKey, name)
		}
		return openai.New(id, &openai.Options{APIKey: key, BaseURL: base, HTTPClient: opts.HTTPClient, Retry: opts.Retry})
	case "ollama":
		base := opts.pick(opts.BaseURL, "OLLAMA_BASE_URL")
		if base == "" {
			base = DefaultOllamaBaseURL
		}
		return openai.New(id, &openai.Options{APIKey: opts.APIKey, BaseURL: base, HTTPClient: opts.HTTPClient, Retry: opts.Retry, LegacyMaxTokens: true})
	case "anthropic":
		key := opts.pick(opts.APIKey, "ANTHROPIC_API_KEY")
		if key == "" {
			return nil, fmt.Errorf("%w: set ANTHROPIC_API_KEY for %s", ErrNoAPIKey, name)
		}
		return anthropic.New(id, &anthropic.Options{APIKey: key, BaseURL: opts.pick(opts.BaseURL, "ANTHROPIC_BASE_URL"), HTTPClient: opts.HTTPClient, Retry: opts.Retry})
	}
	return nil, fmt.Errorf("%w: %q (want gemini-*, openai/<model>, anthropic/<model>, claude-*, or ollama/<model>)", ErrUnknownModel, name)
}

// split returns the adapter family and the model id the API expects.
func split(name string) (family, id string) {
	if prefix, rest, ok := strings.Cut(name, "/"); ok && rest != "" {
		switch prefix {
		case "gemini", "google", "openai", "anthropic", "ollama":
			if prefix == "google" {
				prefix = "gemini"
			}
			return prefix, rest
		}
	}
	switch {
	case strings.HasPrefix(name, "gemini-"):
		return "gemini", name
	case strings.HasPrefix(name, "claude-"):
		return "anthropic", name
	case strings.HasPrefix(name, "gpt-"), strings.HasPrefix(name, "chatgpt-"),
		strings.HasPrefix(name, "o1"), strings.HasPrefix(name, "o3"), strings.HasPrefix(name, "o4-"):
		return "openai", name
	}
	return "", name
}

func vertex(opts *Options) bool {
	v := strings.ToLower(opts.getenv("GOOGLE_GENAI_USE_VERTEXAI"))
	return v == "true" || v == "1"
}

func geminiKey(opts *Options) string {
	if opts.APIKey != "" {
		return opts.APIKey
	}
	if k := opts.getenv("GOOGLE_API_KEY"); k != "" {
		return k
	}
	return opts.getenv("GEMINI_API_KEY")
}

func openGemini(ctx context.Context, id string, opts *Options) (model.LLM, error) {
	cc := &genai.ClientConfig{HTTPClient: opts.HTTPClient}
	cc.HTTPOptions.BaseURL = opts.BaseURL
	if vertex(opts) {
		cc.Backend = genai.BackendVertexAI
		cc.Project = opts.getenv("GOOGLE_CLOUD_PROJECT")
		cc.Location = opts.getenv("GOOGLE_CLOUD_LOCATION")
		if cc.Project == "" {
			// Vertex AI express mode authenticates with a key instead.
			cc.APIKey = geminiKey(opts)
		}
	} else {
		cc.Backend = genai.BackendGeminiAPI
		cc.APIKey = geminiKey(opts)
		if cc.APIKey == "" {
			return nil, fmt.Errorf("%w: set GOOGLE_API_KEY or GEMINI_API_KEY for %s (or GOOGLE_GENAI_USE_VERTEXAI=true)", ErrNoAPIKey, id)
		}
	}
	m, err := gemini.New(ctx, id, cc, &gemini.Options{Retry: opts.Retry})
	if err != nil {
		return nil, fmt.Errorf("provider: gemini: %w", err)
	}
	return m, nil
}

// DefaultModel returns the default model name of the first provider whose
// credentials getenv shows (Gemini or Vertex AI, then OpenAI, then
// Anthropic), and false when there are none. A nil getenv means os.Getenv.
func DefaultModel(getenv func(string) string) (string, bool) {
	opts := &Options{Getenv: getenv}
	switch {
	case geminiKey(opts) != "" || vertex(opts) && opts.getenv("GOOGLE_CLOUD_PROJECT") != "":
		return DefaultGemini, true
	case opts.getenv("OPENAI_API_KEY") != "":
		return DefaultOpenAI, true
	case opts.getenv("ANTHROPIC_API_KEY") != "":
		return DefaultAnthropic, true
	}
	return "", false
}

// DefaultFromEnv is DefaultModel over the process environment.
func DefaultFromEnv() (string, bool) { return DefaultModel(nil) }
