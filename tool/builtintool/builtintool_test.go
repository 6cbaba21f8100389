package builtintool_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/codeexec"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/anthropic"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/builtintool"
	"github.com/loomkit/loom/tool/loadmemorytool"
)

// groundedModel answers with grounding metadata and records its requests.
type groundedModel struct{ reqs []*model.Request }

func (*groundedModel) Name() string { return "gemini-2.5-flash" }
func (g *groundedModel) Generate(_ context.Context, req *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	g.reqs = append(g.reqs, req)
	return func(yield func(*model.Response, error) bool) {
		yield(&model.Response{
			Content:           genai.NewContentFromText("Sunny.", genai.RoleModel),
			GroundingMetadata: &genai.GroundingMetadata{WebSearchQueries: []string{"paris weather"}},
		}, nil)
	}
}

func run(t *testing.T, m model.LLM, tools ...tool.Tool) (*session.Session, error) {
	t.Helper()
	return runConfig(t, m, llmagent.Config{Tools: tools})
}

// runConfig runs an agent of configuration cfg, named "a", on m.
func runConfig(t *testing.T, m model.LLM, cfg llmagent.Config) (*session.Session, error) {
	t.Helper()
	cfg.Name, cfg.Model = "a", m
	a, err := llmagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	svc := memsession.NewService()
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: svc})
	if err != nil {
		t.Fatal(err)
	}
	key := session.Key{AppName: "app", UserID: "u", SessionID: "s"}
	if _, err := svc.Create(context.Background(), key, nil); err != nil {
		t.Fatal(err)
	}
	_, runErr := r.RunSync(context.Background(), "u", "s", genai.NewContentFromText("weather in Paris?", genai.RoleUser), nil)
	s, err := svc.Get(context.Background(), key, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, runErr
}

// TestBuiltInToolsInRequest checks that built-in tools reach the request
// as genai tools next to the function declarations (and next to the
// provider's code execution, which codeexec.BuiltIn adds), are never
// declared as functions, and that the grounding metadata of the answer is
// kept on the committed event.
func TestBuiltInToolsInRequest(t *testing.T) {
	lm, _ := loadmemorytool.New()
	m := &groundedModel{}
	sess, err := runConfig(t, m, llmagent.Config{Tools: []tool.Tool{builtintool.GoogleSearch(), builtintool.URLContext(), lm}, CodeExecutor: codeexec.BuiltIn{}})
	if err != nil {
		t.Fatal(err)
	}
	tools := m.reqs[0].Config.Tools
	var decls []string
	var search, url, code int
	for _, gt := range tools {
		for _, d := range gt.FunctionDeclarations {
			decls = append(decls, d.Name)
		}
		if gt.GoogleSearch != nil {
			search++
		}
		if gt.URLContext != nil {
			url++
		}
		if gt.CodeExecution != nil {
			code++
		}
	}
	if strings.Join(decls, ",") != "load_memory" || search != 1 || url != 1 || code != 1 {
		t.Fatalf("declarations %v; search %d url %d code %d", decls, search, url, code)
	}
	last := sess.At(sess.Len() - 1)
	if last.GroundingMetadata == nil || last.GroundingMetadata.WebSearchQueries[0] != "paris weather" {
		t.Errorf("committed event lost the grounding metadata: %+v", last.GroundingMetadata)
	}
}

// TestBuiltInToolOnWrongModel checks the clear error when a built-in tool
// is given to a model whose provider cannot run it: the invocation fails
// naming the tool, and the model is not called.
func TestBuiltInToolOnWrongModel(t *testing.T) {
	m, err := anthropic.New("claude-sonnet-4-5", &anthropic.Options{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = run(t, m, builtintool.URLContext())
	if !errors.Is(err, model.ErrUnsupportedContent) || !strings.Contains(err.Error(), "url_context") {
		t.Fatalf("err = %v", err)
	}
}

// TestGroundingToolsAddTheirGenaiTool checks the maps, enterprise search
// and Vertex AI Search tools each add their genai tool to a request, and
// that Vertex AI Search needs exactly one source.
func TestGroundingToolsAddTheirGenaiTool(t *testing.T) {
	vs, err := builtintool.VertexAISearch("", "projects/p/locations/global/collections/c/engines/e", "lang=en", 0)
	if err != nil {
		t.Fatal(err)
	}
	var req model.Request
	for _, tl := range []*builtintool.Tool{builtintool.GoogleMaps(), builtintool.EnterpriseWebSearch(), vs} {
		if _, ok := any(tl).(tool.Function); ok {
			t.Errorf("%s is a function the model can call", tl.Name())
		}
		if err := tl.ProcessRequest(context.Background(), nil, &req); err != nil {
			t.Fatal(err)
		}
	}
	ts := req.Config.Tools
	if len(ts) != 3 || ts[0].GoogleMaps == nil || ts[1].EnterpriseWebSearch == nil || ts[2].Retrieval == nil ||
		ts[2].Retrieval.VertexAISearch.Engine != "projects/p/locations/global/collections/c/engines/e" ||
		ts[2].Retrieval.VertexAISearch.Filter != "lang=en" || ts[2].Retrieval.VertexAISearch.MaxResults != nil {
		t.Errorf("tools = %+v", ts)
	}
	for _, args := range [][2]string{{"", ""}, {"ds", "e"}} {
		if _, err := builtintool.VertexAISearch(args[0], args[1], "", 0); err == nil {
			t.Errorf("VertexAISearch(%q, %q) accepted", args[0], args[1])
		}
	}
}
