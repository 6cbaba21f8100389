package functiontool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/artifact/memartifact"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

type chartArgs struct {
	Title string `json:"title"`
}

var png = []byte{0x89, 'P', 'N', 'G', 'c', 'h', 'a', 'r', 't'}

// newChartTool returns a tool that saves a PDF report as an artifact and
// returns a chart image part plus that artifact.
func newChartTool(t *testing.T) tool.Tool {
	t.Helper()
	ct, err := functiontool.New(functiontool.Config{Name: "render_chart"},
		func(ctx context.Context, tc tool.Context, a chartArgs) (*functiontool.Media, error) {
			if _, err := tc.SaveArtifact(ctx, "report.pdf", genai.NewPartFromBytes([]byte("%PDF-1"), "application/pdf")); err != nil {
				return nil, err
			}
			return &functiontool.Media{
				Response:  map[string]any{"title": a.Title},
				Parts:     []*genai.Part{genai.NewPartFromBytes(png, "image/png")},
				Artifacts: []string{"report.pdf"},
			}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return ct
}

// TestT14MediaReachTheFunctionResponse: a function tool's Media (a part and
// an artifact it saved) become the function response's Parts, stored with
// the event and sent to the model on its next call; the JSON response is
// kept beside them.
func TestT14MediaReachTheFunctionResponse(t *testing.T) {
	llm := scripted.NewSequence("m", scripted.Call("render_chart", map[string]any{"title": "Sales"}), scripted.Text("Here it is."))
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: llm, Tools: []tool.Tool{newChartTool(t)}})
	if err != nil {
		t.Fatal(err)
	}
	sessions := memsession.NewService()
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: sessions, Artifacts: memartifact.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RunSync(t.Context(), "u", "s", genai.NewContentFromText("chart", genai.RoleUser), nil); err != nil {
		t.Fatal(err)
	}
	sess, err := sessions.Get(t.Context(), session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var fr *genai.FunctionResponse
	for _, ev := range sess.Events() {
		if frs := ev.FunctionResponses(); len(frs) == 1 {
			fr = frs[0]
		}
	}
	if fr == nil {
		t.Fatal("no function response stored")
	}
	if fr.Response["title"] != "Sales" {
		t.Errorf("response = %v", fr.Response)
	}
	if len(fr.Parts) != 2 || fr.Parts[0].InlineData == nil || string(fr.Parts[0].InlineData.Data) != string(png) ||
		fr.Parts[1].InlineData == nil || fr.Parts[1].InlineData.MIMEType != "application/pdf" || fr.Parts[1].InlineData.DisplayName != "report.pdf" {
		t.Fatalf("stored parts = %+v", fr.Parts)
	}
	// The model's second request holds the same parts.
	reqs := llm.Requests()
	last := reqs[len(reqs)-1].Contents
	got := last[len(last)-1].Parts[0].FunctionResponse
	if got == nil || len(got.Parts) != 2 {
		t.Fatalf("model request lacks the media: %+v", last[len(last)-1])
	}
}

// TestT14MediaSurviveTheWireCodec: an event whose function response has
// parts encodes them in the session JSON and decodes them back.
func TestT14MediaSurviveTheWireCodec(t *testing.T) {
	ev := event.New("inv", "assistant")
	ev.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{genai.NewPartFromFunctionResponseWithParts("render_chart",
		map[string]any{"ok": true}, []*genai.FunctionResponsePart{genai.NewFunctionResponsePartFromBytes(png, "image/png"),
			genai.NewFunctionResponsePartFromURI("gs://b/c.pdf", "application/pdf")})}}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"parts":[{"inlineData":{"mimeType":"image/png","data":"iVBOR2NoYXJ0"}},{"fileData":{"fileUri":"gs://b/c.pdf","mimeType":"application/pdf"}}]`) {
		t.Errorf("wire form = %s", b)
	}
	var back event.Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	fr := back.FunctionResponses()[0]
	if len(fr.Parts) != 2 || string(fr.Parts[0].InlineData.Data) != string(png) || fr.Parts[1].FileData.FileURI != "gs://b/c.pdf" {
		t.Errorf("decoded parts = %+v", fr.Parts)
	}
}

// TestT14InvalidMedia: a text part is not media; the model gets an error
// response naming it, and no parts.
func TestT14InvalidMedia(t *testing.T) {
	bad, err := functiontool.New(functiontool.Config{Name: "bad"},
		func(context.Context, tool.Context, struct{}) (functiontool.Media, error) {
			return functiontool.Media{Parts: []*genai.Part{genai.NewPartFromText("not media")}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = bad.RunMedia(t.Context(), nil, nil)
	if !errors.Is(err, functiontool.ErrInvalidMedia) {
		t.Fatalf("err = %v, want ErrInvalidMedia", err)
	}
	events := runAgent(t, []tool.Tool{bad}, scripted.Call("bad", nil), scripted.Text("ok"))
	fr := functionResponse(t, events)
	if msg, _ := fr.Response["error"].(string); !strings.Contains(msg, "inline data or file data") || fr.Parts != nil {
		t.Errorf("response = %v, parts = %v", fr.Response, fr.Parts)
	}
}

// TestT14RunKeepsTheJSON: Run, the plain form, returns the JSON part of a
// Media result.
func TestT14RunKeepsTheJSON(t *testing.T) {
	tl, err := functiontool.New(functiontool.Config{Name: "pic"},
		func(context.Context, tool.Context, struct{}) (functiontool.Media, error) {
			return functiontool.Media{Response: "a cat", Parts: []*genai.Part{genai.NewPartFromBytes(png, "image/png")}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tl.Run(t.Context(), nil, nil)
	if err != nil || res["result"] != "a cat" {
		t.Errorf("Run = %v, %v", res, err)
	}
	if d := tl.Declaration(); d.ResponseJsonSchema != nil {
		t.Errorf("a Media result infers a response schema: %v", d.ResponseJsonSchema)
	}
}
