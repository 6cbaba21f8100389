package gemini_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/gemini"
	"github.com/loomkit/loom/model/retry"
)

func ExampleNew() {
	// A stand-in for generativelanguage.googleapis.com.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello!"}]},"finishReason":"STOP"}],"modelVersion":"gemini-2.5-flash"}`)
	}))
	defer srv.Close()

	llm, err := gemini.New(context.Background(), "gemini-2.5-flash", &genai.ClientConfig{
		APIKey:      "example-key",
		Backend:     genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL},
	}, &gemini.Options{Retry: &retry.Policy{MaxAttempts: 3}})
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &model.Request{Contents: []*genai.Content{genai.NewContentFromText("Hi", genai.RoleUser)}}
	for resp, err := range llm.Generate(context.Background(), req, false) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(resp.Text(), resp.FinishReason, resp.ModelVersion)
	}
	// Output: Hello! STOP gemini-2.5-flash
}

// Vertex AI: a project and location instead of an API key; credentials come
// from Application Default Credentials unless an HTTPClient is given.
func ExampleNew_vertexAI() {
	llm, err := gemini.New(context.Background(), "gemini-2.5-pro", &genai.ClientConfig{
		Backend:    genai.BackendVertexAI,
		Project:    "my-project",
		Location:   "us-central1",
		HTTPClient: http.DefaultClient, // normally an authenticated client
	}, nil)
	fmt.Println(llm.Name(), err)
	// Output: gemini-2.5-pro <nil>
}
