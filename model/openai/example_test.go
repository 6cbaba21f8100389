package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/openai"
)

// A local OpenAI-compatible server (Ollama, vLLM, LM Studio, llama.cpp)
// needs only a base URL; here an httptest server plays that part.
func ExampleNew() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"1","object":"chat.completion","model":"llama3.2","choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()

	llm, err := openai.New("llama3.2", &openai.Options{BaseURL: srv.URL + "/v1"})
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
		fmt.Println(resp.Text(), resp.FinishReason)
	}
	// Output: Hello! STOP
}

// Azure OpenAI's v1 endpoint takes its key in an api-key header.
func ExampleNew_azure() {
	llm, err := openai.New("my-gpt-4o-deployment", &openai.Options{
		BaseURL: "https://my-resource.openai.azure.com/openai/v1",
		Header:  http.Header{"Api-Key": {"azure-key"}},
	})
	fmt.Println(llm.Name(), err)
	// Output: my-gpt-4o-deployment <nil>
}
