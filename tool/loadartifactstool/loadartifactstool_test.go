package loadartifactstool_test

import (
	"context"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/memartifact"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/loadartifactstool"
)

// TestLoadArtifacts checks listing and reading: text comes back as text,
// binary data as its type and size, unknown names as missing.
func TestLoadArtifacts(t *testing.T) {
	ctx := context.Background()
	arts := memartifact.NewService()
	save := func(name string, p *genai.Part) {
		if _, err := arts.Save(ctx, artifact.Ref{AppName: "app", UserID: "u", SessionID: "s", Name: name}, p); err != nil {
			t.Fatal(err)
		}
	}
	save("notes.txt", genai.NewPartFromText("buy milk"))
	save("report.csv", &genai.Part{InlineData: &genai.Blob{MIMEType: "text/csv", Data: []byte("a,b\n1,2\n")}})
	save("logo.png", &genai.Part{InlineData: &genai.Blob{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}})

	la, err := loadartifactstool.New()
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.NewSequence("m",
		scripted.Call(loadartifactstool.Name, nil),
		scripted.Call(loadartifactstool.Name, map[string]any{"artifact_names": []any{"notes.txt", "report.csv", "logo.png", "nope.txt"}}),
		scripted.Text("done"))
	a, _ := llmagent.New(llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{la}})
	r, _ := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: memsession.NewService(), Artifacts: arts, AutoCreateSession: true})
	evs, err := r.RunSync(ctx, "u", "s", genai.NewContentFromText("read my files", genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	list := evs[1].FunctionResponses()[0].Response
	if got, _ := list["available"].([]any); len(got) != 3 {
		t.Fatalf("listing %v", list)
	}
	read := evs[3].FunctionResponses()[0].Response
	loaded, _ := read["artifacts"].([]any)
	if len(loaded) != 3 {
		t.Fatalf("read %v", read)
	}
	byName := map[string]map[string]any{}
	for _, l := range loaded {
		m := l.(map[string]any)
		byName[m["name"].(string)] = m
	}
	if byName["notes.txt"]["text"] != "buy milk" || byName["report.csv"]["text"] != "a,b\n1,2\n" {
		t.Fatalf("text artifacts %v", byName)
	}
	if png := byName["logo.png"]; png["text"] != nil || png["mimeType"] != "image/png" || png["size"] != 4.0 && png["size"] != 4 {
		t.Fatalf("binary artifact %v", png)
	}
	if missing, _ := read["missing"].([]any); len(missing) != 1 || missing[0] != "nope.txt" {
		t.Fatalf("missing %v", read["missing"])
	}
	// The binary file reaches the model as a real part after the response.
	reqs := m.Requests()
	after := reqs[2].Contents[len(reqs[2].Contents)-1]
	if after.Role != genai.RoleUser || len(after.Parts) != 2 || after.Parts[1].InlineData == nil ||
		string(after.Parts[1].InlineData.Data) != "\x89PNG" || after.Parts[1].InlineData.MIMEType != "image/png" {
		t.Fatalf("content after the response = %+v", after.Parts)
	}
	if before := reqs[2].Contents[len(reqs[2].Contents)-2]; before.Parts[0].FunctionResponse == nil {
		t.Fatalf("the file does not follow the function response: %+v", before)
	}
	if last := reqs[1].Contents[len(reqs[1].Contents)-1]; last.Parts[0].FunctionResponse == nil {
		t.Errorf("a listing added content: %+v", last)
	}
}
