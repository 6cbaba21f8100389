package openai_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/internal/fakeapi"
	"github.com/loomkit/loom/model/openai"
)

type chatBody struct {
	Messages []struct {
		Role       string          `json:"role"`
		ToolCallID string          `json:"tool_call_id"`
		Content    json.RawMessage `json:"content"`
	} `json:"messages"`
}

type contentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

// TestToolMediaFollowTheToolMessages runs a tool that returns an image
// through the runner (CONFORMANCE T14): Chat Completions tool messages hold
// only text, so the tool messages come first and one user message after
// them carries each call's image, introduced by MediaIntro.
func TestToolMediaFollowTheToolMessages(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/parallel_calls.json", false), fakeapi.File(t, 200, "testdata/text.json", false))
	if got := fakeapi.RunWeatherMedia(t, newModel(t, srv, nil)); got != "It is sunny in Paris." {
		t.Errorf("answer = %q", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d model calls, want 2", len(reqs))
	}
	var body chatBody
	if err := json.Unmarshal(reqs[1].Body, &body); err != nil {
		t.Fatal(err)
	}
	n := len(body.Messages)
	if n < 3 || body.Messages[n-3].ToolCallID != "call_a" || body.Messages[n-2].ToolCallID != "call_b" || body.Messages[n-1].Role != "user" {
		t.Fatalf("messages do not end with the two tool messages and a user message: %s", reqs[1].Body)
	}
	var parts []contentPart
	if err := json.Unmarshal(body.Messages[n-1].Content, &parts); err != nil {
		t.Fatal(err)
	}
	url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(fakeapi.MapPNG)
	want := []contentPart{{Type: "text", Text: fmt.Sprintf(openai.MediaIntro, "get_weather", "call_a")}, {Type: "image_url"},
		{Type: "text", Text: fmt.Sprintf(openai.MediaIntro, "get_weather", "call_b")}, {Type: "image_url"}}
	want[1].ImageURL.URL, want[3].ImageURL.URL = url, url
	if len(parts) != len(want) {
		t.Fatalf("media message = %s", body.Messages[n-1].Content)
	}
	for i := range want {
		if parts[i] != want[i] {
			t.Errorf("part %d = %+v, want %+v", i, parts[i], want[i])
		}
	}
}

// TestToolMediaUnsupported: media Chat Completions cannot take (here a
// video) fail with model.ErrUnsupportedContent before any request.
// (CONFORMANCE T14)
func TestToolMediaUnsupported(t *testing.T) {
	srv := fakeapi.Start(t)
	req := &model.Request{Contents: []*genai.Content{
		{Role: genai.RoleModel, Parts: []*genai.Part{genai.NewPartFromFunctionCall("clip", nil)}},
		{Role: genai.RoleUser, Parts: []*genai.Part{genai.NewPartFromFunctionResponseWithParts("clip", map[string]any{"ok": true},
			[]*genai.FunctionResponsePart{genai.NewFunctionResponsePartFromBytes([]byte{0}, "video/mp4")})}},
	}}
	_, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), req, false))
	if !errors.Is(err, model.ErrUnsupportedContent) {
		t.Errorf("err = %v, want model.ErrUnsupportedContent", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}
