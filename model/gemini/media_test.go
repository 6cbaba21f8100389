package gemini_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/loomkit/loom/model/internal/fakeapi"
)

// TestToolMediaInFunctionResponseParts runs a tool that returns an image
// through the runner (CONFORMANCE T14): Gemini receives it as the function
// response's own parts (functionResponse.parts[].inlineData).
func TestToolMediaInFunctionResponseParts(t *testing.T) {
	srv := fakeapi.Start(t, fakeapi.File(t, 200, "testdata/calls.json", false), fakeapi.File(t, 200, "testdata/text.json", false))
	if got := fakeapi.RunWeatherMedia(t, newModel(t, srv, nil)); got != "It is sunny in Paris." {
		t.Errorf("answer = %q", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d model calls, want 2", len(reqs))
	}
	var body struct {
		Contents []struct {
			Parts []struct {
				FunctionResponse *struct {
					Name     string         `json:"name"`
					Response map[string]any `json:"response"`
					Parts    []struct {
						InlineData struct {
							MIMEType string `json:"mimeType"`
							Data     string `json:"data"`
						} `json:"inlineData"`
					} `json:"parts"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(reqs[1].Body, &body); err != nil {
		t.Fatal(err)
	}
	var withMap int
	for _, c := range body.Contents {
		for _, p := range c.Parts {
			fr := p.FunctionResponse
			if fr == nil {
				continue
			}
			if fr.Response["forecast"] == nil {
				t.Errorf("function response lost its JSON: %+v", fr)
			}
			if len(fr.Parts) == 1 && fr.Parts[0].InlineData.MIMEType == "image/png" &&
				fr.Parts[0].InlineData.Data == base64.StdEncoding.EncodeToString(fakeapi.MapPNG) {
				withMap++
			}
		}
	}
	if withMap != 2 {
		t.Errorf("%d function responses carry the map, want 2: %s", withMap, reqs[1].Body)
	}
}
