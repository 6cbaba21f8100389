package provider_test

import (
	"errors"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/internal/fakeapi"
	"github.com/loomkit/loom/model/provider"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestOpenRoutesByName(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env       map[string]string
		reply     string
		wantName  string
		wantPath  string
		wantAuthH string
		wantAuth  string
	}{
		{"gemini-2.5-flash", map[string]string{"GOOGLE_API_KEY": "g-key"}, "../gemini/testdata/text.json", "gemini-2.5-flash",
			"/v1beta/models/gemini-2.5-flash:generateContent", "X-Goog-Api-Key", "g-key"},
		{"gemini/gemini-2.5-pro", map[string]string{"GEMINI_API_KEY": "g2"}, "../gemini/testdata/text.json", "gemini-2.5-pro",
			"/v1beta/models/gemini-2.5-pro:generateContent", "X-Goog-Api-Key", "g2"},
		{"gemini-2.5-flash", map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "proj", "GOOGLE_CLOUD_LOCATION": "us-central1"},
			"../gemini/testdata/text.json", "gemini-2.5-flash",
			"/v1beta1/projects/proj/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent", "", ""},
		{"openai/gpt-4o-mini", map[string]string{"OPENAI_API_KEY": "o-key"}, "../openai/testdata/text.json", "gpt-4o-mini",
			"/chat/completions", "Authorization", "Bearer o-key"},
		{"gpt-4o", map[string]string{"OPENAI_API_KEY": "o-key"}, "../openai/testdata/text.json", "gpt-4o",
			"/chat/completions", "Authorization", "Bearer o-key"},
		{"ollama/llama3.2", nil, "../openai/testdata/text.json", "llama3.2",
			"/chat/completions", "Authorization", ""},
		{"anthropic/claude-haiku-4-5", map[string]string{"ANTHROPIC_API_KEY": "a-key"}, "../anthropic/testdata/text.json", "claude-haiku-4-5",
			"/v1/messages", "X-Api-Key", "a-key"},
		{"claude-sonnet-4-5", map[string]string{"ANTHROPIC_API_KEY": "a-key"}, "../anthropic/testdata/text.json", "claude-sonnet-4-5",
			"/v1/messages", "X-Api-Key", "a-key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeapi.Start(t, fakeapi.File(t, 200, tc.reply, false))
			llm, err := provider.Open(t.Context(), tc.name, &provider.Options{BaseURL: srv.URL, HTTPClient: srv.Client(), Getenv: env(tc.env)})
			if err != nil {
				t.Fatal(err)
			}
			if llm.Name() != tc.wantName {
				t.Errorf("Name() = %q, want %q", llm.Name(), tc.wantName)
			}
			req := &model.Request{Contents: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}}
			resps, err := fakeapi.Collect(llm.Generate(t.Context(), req, false))
			if err != nil {
				t.Fatal(err)
			}
			if resps[0].Text() != "It is sunny in Paris." {
				t.Errorf("text = %q", resps[0].Text())
			}
			r := srv.Requests()[0]
			if r.Path != tc.wantPath {
				t.Errorf("path = %q, want %q", r.Path, tc.wantPath)
			}
			if tc.wantAuthH != "" && r.Header.Get(tc.wantAuthH) != tc.wantAuth {
				t.Errorf("%s = %q, want %q", tc.wantAuthH, r.Header.Get(tc.wantAuthH), tc.wantAuth)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want error
	}{
		{"mystery-model", nil, provider.ErrUnknownModel},
		{"gemini-2.5-flash", nil, provider.ErrNoAPIKey},
		{"openai/gpt-4o", nil, provider.ErrNoAPIKey},
		{"claude-sonnet-4-5", nil, provider.ErrNoAPIKey},
	} {
		_, err := provider.Open(t.Context(), tc.name, &provider.Options{Getenv: env(tc.env)})
		if !errors.Is(err, tc.want) {
			t.Errorf("Open(%q) = %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestOpenAIBaseURLWithoutKey(t *testing.T) {
	llm, err := provider.Open(t.Context(), "openai/qwen3", &provider.Options{Getenv: env(map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"})})
	if err != nil || llm.Name() != "qwen3" {
		t.Fatalf("Open = %v, %v", llm, err)
	}
}

func TestDefaultModel(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
		ok   bool
	}{
		{nil, "", false},
		{map[string]string{"GOOGLE_API_KEY": "k"}, provider.DefaultGemini, true},
		{map[string]string{"GEMINI_API_KEY": "k", "OPENAI_API_KEY": "k"}, provider.DefaultGemini, true},
		{map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "1", "GOOGLE_CLOUD_PROJECT": "p"}, provider.DefaultGemini, true},
		{map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}, provider.DefaultOpenAI, true},
		{map[string]string{"ANTHROPIC_API_KEY": "k"}, provider.DefaultAnthropic, true},
	} {
		got, ok := provider.DefaultModel(env(tc.env))
		if got != tc.want || ok != tc.ok {
			t.Errorf("DefaultModel(%v) = %q, %v; want %q, %v", tc.env, got, ok, tc.want, tc.ok)
		}
	}
}
