package anthropic_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/anthropic"
)

func ExampleNew() {
	// A stand-in for api.anthropic.com.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"Hello!"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}`)
	}))
	defer srv.Close()

	llm, err := anthropic.New("claude-haiku-4-5", &anthropic.Options{
		APIKey:    "sk-ant-example",
		BaseURL:   srv.URL,
		MaxTokens: 1024, // used when a request sets no MaxOutputTokens
	})
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
		fmt.Println(resp.Text(), resp.FinishReason, resp.UsageMetadata.TotalTokenCount)
	}
	// Output: Hello! STOP 5
}
