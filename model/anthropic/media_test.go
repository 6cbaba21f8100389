package anthropic_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/internal/fakeapi"
)

type block struct {
	Type      string  `json:"type"`
	ToolUseID string  `json:"tool_use_id"`
	Text      string  `json:"text"`
	Content   []block `json:"content"`
	Source    struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	} `json:"source"`
}

// TestToolMediaInToolResult runs a tool that returns an image through the
// runner (CONFORMANCE T14): each tool_result block holds the JSON response
// as text, then the image as a base64 image block.
func TestToolMediaInToolResult(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/tool_use.json", false), fakeapi.File(t, 200, "testdata/text.json", false))
	if got := fakeapi.RunWeatherMedia(t, newModel(t, srv, nil)); got != "It is sunny in Paris." {
		t.Errorf("answer = %q", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d model calls, want 2", len(reqs))
	}
	var body struct {
		Messages []struct {
			Role    string  `json:"role"`
			Content []block `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[1].Body, &body); err != nil {
		t.Fatal(err)
	}
	last := body.Messages[len(body.Messages)-1]
	var results int
	for _, b := range last.Content {
		if b.Type != "tool_result" {
			continue
		}
		results++
		if len(b.Content) != 2 || b.Content[0].Type != "text" || b.Content[1].Type != "image" {
			t.Errorf("tool_result %s content = %+v, want text then image", b.ToolUseID, b.Content)
			continue
		}
		src := b.Content[1].Source
		if src.Type != "base64" || src.MediaType != "image/png" || src.Data != base64.StdEncoding.EncodeToString(fakeapi.MapPNG) {
			t.Errorf("tool_result %s image source = %+v", b.ToolUseID, src)
		}
	}
	if last.Role != "user" || results != 2 {
		t.Errorf("last message (%s) has %d tool results, want 2: %s", last.Role, results, reqs[1].Body)
	}
}

// TestToolMediaDocumentsAndURLs: a PDF becomes a document block, an image
// by https URL an image block with a URL source. (CONFORMANCE T14)
func TestToolMediaDocumentsAndURLs(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/text.json", false))
	req := mediaRequest(
		genai.NewFunctionResponsePartFromBytes([]byte("%PDF-1"), "application/pdf"),
		genai.NewFunctionResponsePartFromURI("https://example.com/map.png", "image/png"))
	if _, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), req, false)); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Content []block `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	tr := body.Messages[len(body.Messages)-1].Content[0]
	if len(tr.Content) != 3 {
		t.Fatalf("tool_result = %+v", tr)
	}
	if d := tr.Content[1]; d.Type != "document" || d.Source.Type != "base64" || d.Source.Data != base64.StdEncoding.EncodeToString([]byte("%PDF-1")) {
		t.Errorf("document block = %+v", d)
	}
	if i := tr.Content[2]; i.Type != "image" || i.Source.Type != "url" || i.Source.URL != "https://example.com/map.png" {
		t.Errorf("image block = %+v", i)
	}
}

// TestToolMediaUnsupported: audio, which a tool_result cannot hold, fails
// with model.ErrUnsupportedContent before any request. (CONFORMANCE T14)
func TestToolMediaUnsupported(t *testing.T) {
	srv := fakeapi.Start(t)
	req := mediaRequest(genai.NewFunctionResponsePartFromBytes([]byte{0}, "audio/wav"))
	_, err := fakeapi.Collect(newModel(t, srv, nil).Generate(t.Context(), req, false))
	if !errors.Is(err, model.ErrUnsupportedContent) {
		t.Errorf("err = %v, want model.ErrUnsupportedContent", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}

func mediaRequest(parts ...*genai.FunctionResponsePart) *model.Request {
	call := genai.NewPartFromFunctionCall("fetch", nil)
	call.FunctionCall.ID = "toolu_1"
	resp := genai.NewPartFromFunctionResponseWithParts("fetch", map[string]any{"ok": true}, parts)
	resp.FunctionResponse.ID = "toolu_1"
	return &model.Request{Contents: []*genai.Content{
		genai.NewContentFromText("fetch it", genai.RoleUser),
		{Role: genai.RoleModel, Parts: []*genai.Part{call}},
		{Role: genai.RoleUser, Parts: []*genai.Part{resp}},
	}}
}
