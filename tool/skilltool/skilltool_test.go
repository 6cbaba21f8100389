package skilltool_test

import (
	"context"
	"embed"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/codeexec"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/skilltool"
)

//go:embed testdata/skills
var embedded embed.FS

func skills(t testing.TB) []*skilltool.Skill {
	t.Helper()
	s, err := skilltool.DiscoverDir("testdata/skills")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Discovery from a directory and from an embed.FS finds the same skills,
// sorted by name, with their frontmatter and instructions.
func TestDiscover(t *testing.T) {
	sub, _ := fs.Sub(embedded, "testdata/skills")
	fromEmbed, err := skilltool.Discover(sub)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range [][]*skilltool.Skill{skills(t), fromEmbed} {
		if len(got) != 2 || got[0].Name != "unit-convert" || got[1].Name != "weather-report" {
			t.Fatalf("skills %v, want unit-convert and weather-report", got)
		}
		w := got[1]
		if w.License != "Apache-2.0" || w.Metadata["author"] != "loom" || !strings.HasPrefix(w.Instructions, "# Weather report") || strings.Contains(w.Instructions, "---") {
			t.Errorf("weather-report = %+v", w)
		}
		b, err := w.Resource("references/units.md")
		if err != nil || !strings.Contains(string(b), "Celsius") {
			t.Errorf("references/units.md: %q %v", b, err)
		}
		for _, bad := range []string{"SKILL.md", "references/../SKILL.md", "../x", "/etc/passwd", "references/missing.md"} {
			if _, err := w.Resource(bad); err == nil {
				t.Errorf("Resource(%q) read a file", bad)
			}
		}
	}
	// A folder holding one skill at its root.
	one, err := skilltool.DiscoverDir("testdata/skills/weather-report")
	if err != nil || len(one) != 1 || one[0].Name != "weather-report" {
		t.Errorf("a skill folder itself: %v %v", one, err)
	}
}

// Bad skills are refused with an error naming the problem.
func TestBadSkills(t *testing.T) {
	for doc, want := range map[string]string{
		"no frontmatter":                                                      "must start with a --- line",
		"---\nname: x\ndescription: d\n":                                      "no --- line closing",
		"---\ndescription: d\n---\nbody":                                      "no name",
		"---\nname: Bad_Name\ndescription: d\n---\n":                          "lowercase",
		"---\nname: -x\ndescription: d\n---\n":                                "lowercase",
		"---\nname: a--b\ndescription: d\n---\n":                              "lowercase",
		"---\nname: x\n---\n":                                                 "no description",
		"---\nname: x\ndescription: [1]\n---\n":                               "want text",
		"---\nname: x\ndescription: d\nmetadata: 3\n---\n":                    "want a map",
		"---\nname: x\ndescription: " + strings.Repeat("d", 1025) + "\n---\n": "1024",
		"---\nname: [\n---\n":                                                 "frontmatter",
	} {
		if _, err := skilltool.Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%.40q) = %v, want an error containing %q", doc, err, want)
		}
	}
	fsys := fstest.MapFS{"other/SKILL.md": {Data: []byte("---\nname: x\ndescription: d\n---\n")}}
	if _, err := skilltool.Discover(fsys); err == nil || !strings.Contains(err.Error(), "folder") {
		t.Errorf("a skill in a folder of another name: %v", err)
	}
	if _, err := skilltool.New(skilltool.Config{Skills: append(skills(t), skills(t)[0])}); err == nil {
		t.Error("New accepted two skills of one name")
	}
}

// A symbolic link out of the skills directory is not followed.
func TestDiscoverDirConfined(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "leak", "references"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "leak", "SKILL.md"), []byte("---\nname: leak\ndescription: d\n---\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "leak", "references", "s.md")); err != nil {
		t.Skip(err)
	}
	s, err := skilltool.DiscoverDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := s[0].Resource("references/s.md"); err == nil {
		t.Errorf("read %q through a link out of the directory", b)
	}
}

// recorder records the requests of the model it wraps.
type recorder struct {
	model.LLM
	mu   sync.Mutex
	reqs []*model.Request
}

func (r *recorder) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.LLM.Generate(ctx, req, stream)
}

func run(t *testing.T, ts *skilltool.Toolset, turns ...scripted.Turn) (*recorder, *session.Session) {
	t.Helper()
	rec := &recorder{LLM: scripted.NewSequence("m", turns...)}
	a, err := llmagent.New(llmagent.Config{Name: "helper", Model: rec, Instruction: "Help.", Toolsets: []tool.Toolset{ts}})
	if err != nil {
		t.Fatal(err)
	}
	svc := session.NewService(memsession.New(), nil)
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: svc, AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RunSync(context.Background(), "u", "s", genai.NewContentFromText("go", genai.RoleUser), nil); err != nil {
		t.Fatal(err)
	}
	sess, err := svc.Get(context.Background(), session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rec, sess
}

func responses(sess *session.Session, name string) []map[string]any {
	var out []map[string]any
	for _, ev := range sess.Events() {
		for _, fr := range ev.FunctionResponses() {
			if fr.Name == name {
				out = append(out, fr.Response)
			}
		}
	}
	return out
}

func systemText(req *model.Request) string {
	var b strings.Builder
	if req.Config != nil && req.Config.SystemInstruction != nil {
		for _, p := range req.Config.SystemInstruction.Parts {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// The model sees ADK's skill instruction and the list of skills; load_skill
// answers with the instructions and makes the skill active.
func TestLoadSkill(t *testing.T) {
	ts, err := skilltool.New(skilltool.Config{Skills: skills(t)})
	if err != nil {
		t.Fatal(err)
	}
	rec, sess := run(t, ts, scripted.Call("load_skill", map[string]any{"name": "weather-report"}), scripted.Text("done"))
	want := "\n\n" + skilltool.SystemInstruction + "\n\n<available_skills>\n<skill>\n<name>\nunit-convert\n</name>\n<description>\nConverts between units &amp; scales (&quot;metric&quot; &lt;-&gt; &#x27;imperial&#x27;).\n</description>\n</skill>\n<skill>\n<name>\nweather-report\n</name>\n<description>\nWrites a weather report for a city. Use it when the user asks for a forecast.\n</description>\n</skill>\n</available_skills>"
	if got := systemText(rec.reqs[0]); !strings.HasPrefix(got, "Help.") || !strings.HasSuffix(got, want) {
		t.Errorf("system instruction:\n%s\nwant it to end with:\n%s", got, want)
	}
	r := responses(sess, "load_skill")
	if len(r) != 1 || r[0]["skill_name"] != "weather-report" || !strings.HasPrefix(r[0]["instructions"].(string), "# Weather report") {
		t.Fatalf("load_skill responses %v", r)
	}
	fm := r[0]["frontmatter"].(map[string]any)
	if fm["name"] != "weather-report" || fm["license"] != "Apache-2.0" || fm["compatibility"] != nil {
		t.Errorf("frontmatter %v", fm)
	}
	if v, _ := sess.Get(skilltool.ActiveStateKey); !slices.Equal(anyStrings(v), []string{"weather-report"}) {
		t.Errorf("active skills %v, want weather-report", v)
	}
}

func anyStrings(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

// Past the cap, loading a skill unloads the oldest; unloading takes a
// skill out; the later requests carry no instructions of skills that are
// not active.
func TestLifecycleAndCap(t *testing.T) {
	tp := tracetest.NewSpanRecorder()
	ts, err := skilltool.New(skilltool.Config{Skills: skills(t), MaxActive: 1, TracerProvider: trace.NewTracerProvider(trace.WithSpanProcessor(tp))})
	if err != nil {
		t.Fatal(err)
	}
	rec, sess := run(t, ts,
		scripted.Call("load_skill", map[string]any{"name": "weather-report"}),
		scripted.Call("load_skill", map[string]any{"name": "unit-convert"}), // unloads weather-report
		scripted.Call("unload_skill", map[string]any{"name": "unit-convert"}),
		scripted.Call("unload_skill", map[string]any{"name": "unit-convert"}), // not loaded
		scripted.Text("done"))
	if v, _ := sess.Get(skilltool.ActiveStateKey); len(anyStrings(v)) != 0 {
		t.Errorf("active skills %v, want none", v)
	}
	// The request after the second load holds unit-convert's instructions
	// and not weather-report's.
	instr := func(req *model.Request) (loaded []string) {
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if p.FunctionResponse != nil && p.FunctionResponse.Name == "load_skill" {
					if _, ok := p.FunctionResponse.Response["instructions"]; ok {
						loaded = append(loaded, p.FunctionResponse.Response["skill_name"].(string))
					} else if p.FunctionResponse.Response["status"] != "unloaded" {
						t.Errorf("load_skill response %v", p.FunctionResponse.Response)
					}
				}
			}
		}
		return loaded
	}
	if got := instr(rec.reqs[1]); !slices.Equal(got, []string{"weather-report"}) {
		t.Errorf("request 2 holds the instructions of %v, want weather-report", got)
	}
	if got := instr(rec.reqs[2]); !slices.Equal(got, []string{"unit-convert"}) {
		t.Errorf("request 3 holds the instructions of %v, want unit-convert only (cap 1)", got)
	}
	if got := instr(rec.reqs[4]); len(got) != 0 {
		t.Errorf("request 5 holds the instructions of %v, want none after the unload", got)
	}
	// The session log keeps what was sent.
	if r := responses(sess, "load_skill"); len(r) != 2 || r[0]["instructions"] == nil {
		t.Errorf("stored load_skill responses %v", r)
	}
	un := responses(sess, "unload_skill")
	if len(un) != 2 || un[0]["status"] != "unloaded" || un[1]["error_code"] != "SKILL_NOT_LOADED" {
		t.Errorf("unload_skill responses %v", un)
	}
	var names []string
	for _, s := range tp.Ended() {
		names = append(names, s.Name())
	}
	if !slices.Equal(names, []string{"load_skill weather-report", "load_skill unit-convert", "unload_skill unit-convert"}) {
		t.Errorf("spans %v", names)
	}
}

// fakeExec records the code it is given.
type fakeExec struct {
	mu    sync.Mutex
	codes []string
}

func (f *fakeExec) Execute(_ context.Context, in codeexec.Input) (codeexec.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.codes = append(f.codes, in.Code)
	return codeexec.Result{Stdout: "ok\n"}, nil
}

// Scripts run only through the configured executor; without one they do
// not run. Resources are read within the skill's folder.
func TestScriptsAndResources(t *testing.T) {
	exec := &fakeExec{}
	ts, err := skilltool.New(skilltool.Config{Skills: skills(t), Executor: exec})
	if err != nil {
		t.Fatal(err)
	}
	_, sess := run(t, ts,
		scripted.Call("execute_skill_script", map[string]any{"skill_name": "weather-report", "script_name": "scripts/report.py", "input_args": "Oslo 'New York'"}),
		scripted.Call("execute_skill_script", map[string]any{"skill_name": "unit-convert", "script_name": "convert.sh", "input_args": "3 km"}),
		scripted.Call("execute_skill_script", map[string]any{"skill_name": "unit-convert", "script_name": "missing.sh"}),
		scripted.Call("load_skill_resource", map[string]any{"skill_name": "weather-report", "path": "references/units.md"}),
		scripted.Call("load_skill_resource", map[string]any{"skill_name": "weather-report", "path": "../unit-convert/SKILL.md"}),
		scripted.Call("load_skill_resource", map[string]any{"skill_name": "weather-report", "path": "references/../../unit-convert/SKILL.md"}),
		scripted.Call("load_skill", map[string]any{"name": "nope"}),
		scripted.Text("done"))
	if len(exec.codes) != 2 {
		t.Fatalf("executor ran %d programs, want 2", len(exec.codes))
	}
	if c := exec.codes[0]; !strings.Contains(c, `sys.argv = ["report.py"] + shlex.split("Oslo 'New York'")`) || !strings.HasSuffix(c, "print(\"report for\", \" \".join(sys.argv[1:]))\n") {
		t.Errorf("python program:\n%s", c)
	}
	if c := exec.codes[1]; !strings.Contains(c, `['bash', '-c', "echo \"converted $1 $2\"\n", "convert.sh"] + shlex.split("3 km")`) {
		t.Errorf("shell program:\n%s", c)
	}
	sr := responses(sess, "execute_skill_script")
	if sr[0]["status"] != "success" || sr[0]["stdout"] != "ok\n" || sr[2]["error_code"] != "SCRIPT_NOT_FOUND" {
		t.Errorf("script responses %v", sr)
	}
	rr := responses(sess, "load_skill_resource")
	if !strings.Contains(rr[0]["content"].(string), "Celsius") || rr[1]["error_code"] != "INVALID_RESOURCE_PATH" || rr[2]["error_code"] != "RESOURCE_NOT_FOUND" {
		t.Errorf("resource responses %v", rr)
	}
	if lr := responses(sess, "load_skill"); lr[0]["error_code"] != "SKILL_NOT_FOUND" || lr[0]["error"] != "Skill 'nope' not found." {
		t.Errorf("load_skill of a missing skill: %v", lr)
	}

	// No executor: the script does not run.
	ts, _ = skilltool.New(skilltool.Config{Skills: skills(t)})
	_, sess = run(t, ts, scripted.Call("execute_skill_script", map[string]any{"skill_name": "weather-report", "script_name": "report.py"}), scripted.Text("done"))
	if r := responses(sess, "execute_skill_script"); r[0]["error_code"] != "NO_CODE_EXECUTOR" {
		t.Errorf("without an executor: %v", r)
	}
}
