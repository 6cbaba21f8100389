package llmagent_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/tool"
)

// countingStore counts the loads of each artifact name.
type countingStore struct {
	artifact.Store
	mu    sync.Mutex
	loads map[string]int
}

func newCountingStore() *countingStore {
	return &countingStore{Store: newMemArtifacts(), loads: map[string]int{}}
}

func (c *countingStore) Load(ctx context.Context, k artifact.Key, v int64) (*genai.Part, error) {
	c.mu.Lock()
	c.loads[k.Name]++
	c.mu.Unlock()
	return c.Store.Load(ctx, k, v)
}

func (c *countingStore) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.loads)
}

// saveFile saves a text file of size bytes as an artifact of the test
// session and returns a reference to the version saved.
func saveFile(t *testing.T, arts *artifact.Service, name string, size int) *genai.Part {
	t.Helper()
	data := []byte(strings.Repeat(name[:1], size))
	v, err := arts.Save(context.Background(), artifact.Ref{AppName: app, UserID: user, SessionID: sid, Name: name},
		&genai.Part{InlineData: &genai.Blob{MIMEType: "text/plain", Data: data}})
	if err != nil {
		t.Fatal(err)
	}
	return &genai.Part{FileData: &genai.FileData{FileURI: artifact.URI(name, v), MIMEType: "text/plain"}}
}

// shownFiles returns the files a request shows as inline data, by display
// name, and their total size.
func shownFiles(req *model.Request) (map[string]bool, int) {
	shown, total := map[string]bool{}, 0
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if p.InlineData != nil {
				shown[p.InlineData.DisplayName] = true
				total += len(p.InlineData.Data)
			}
		}
	}
	return shown, total
}

// noteFor returns the text part of a request that mentions the file.
func noteFor(req *model.Request, name string) string {
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if strings.Contains(p.Text, fmt.Sprintf("%q", name)) {
				return p.Text
			}
		}
	}
	return ""
}

// TestFilesRequestBudget checks that the artifact bytes of one request
// stay within MaxRequestFileBytes: the newest files are shown, the older
// ones become the same note in every request, and a negative budget shows
// them all.
func TestFilesRequestBudget(t *testing.T) {
	const files, size = 10, 100
	for _, tc := range []struct {
		name   string
		budget int64
		shown  int // the newest files shown
	}{
		{"budget", 350, 3},
		{"no limit", -1, files},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arts := artifact.NewService(newMemArtifacts())
			m := scripted.New("m", func(context.Context, *model.Request) (scripted.Turn, error) {
				return scripted.Text("ok"), nil
			}).Recording()
			f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, MaxRequestFileBytes: tc.budget}), arts, nil)
			for i := range files {
				ref := saveFile(t, arts, fmt.Sprintf("f%d.txt", i), size)
				msg := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{ref, {Text: "read it"}}}
				if _, err := f.r.RunSync(context.Background(), user, sid, msg, nil); err != nil {
					t.Fatal(err)
				}
			}
			f.run(t, "and now?", nil)
			reqs := m.Requests()
			last, prev := reqs[len(reqs)-1], reqs[len(reqs)-2]
			shown, total := shownFiles(last)
			if tc.budget >= 0 && int64(total) > tc.budget {
				t.Fatalf("the request holds %d bytes of files, over the budget of %d", total, tc.budget)
			}
			if total != tc.shown*size || len(shown) != tc.shown {
				t.Fatalf("the request shows %d files, %d bytes: %v; want %d files", len(shown), total, shown, tc.shown)
			}
			for i := range files {
				name := fmt.Sprintf("f%d.txt", i)
				if newest := i >= files-tc.shown; newest != shown[name] {
					t.Errorf("%s shown = %v, want %v", name, shown[name], newest)
				}
				if shown[name] {
					continue
				}
				note := noteFor(last, name)
				want := fmt.Sprintf("[File %q is not shown: it does not fit in the %d bytes of files shown to the model in one request, which go to the newest files first]", name, tc.budget)
				if note != want {
					t.Errorf("note for %s:\n got %q\nwant %q", name, note, want)
				}
				if again := noteFor(prev, name); again != note {
					t.Errorf("the note for %s changed between requests: %q, then %q", name, again, note)
				}
			}
		})
	}
}

// TestFilesRequestBudgetDefault checks that a zero budget means
// DefaultMaxRequestFileBytes.
func TestFilesRequestBudgetDefault(t *testing.T) {
	arts := artifact.NewService(newMemArtifacts())
	size := int(llmagent.DefaultMaxRequestFileBytes/2 - 1)
	parts := []*genai.Part{{Text: "read them"}}
	for _, name := range []string{"a.bin", "b.bin", "c.bin"} {
		parts = append(parts, saveFile(t, arts, name, size))
	}
	m := scripted.NewSequence("m", scripted.Text("ok"))
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m}), arts, nil)
	if _, err := f.r.RunSync(context.Background(), user, sid, &genai.Content{Role: genai.RoleUser, Parts: parts}, nil); err != nil {
		t.Fatal(err)
	}
	req := m.Requests()[0]
	shown, total := shownFiles(req)
	if int64(total) > llmagent.DefaultMaxRequestFileBytes || !shown["b.bin"] || !shown["c.bin"] || shown["a.bin"] {
		t.Fatalf("shown %v, %d bytes", shown, total)
	}
	if note := noteFor(req, "a.bin"); !strings.Contains(note, "is not shown") {
		t.Fatalf("note for a.bin: %q", note)
	}
}

// TestFilesLoadedOncePerInvocation checks that the model calls of one
// invocation's tool loop load each referenced version once, and that a
// later invocation still shows them.
func TestFilesLoadedOncePerInvocation(t *testing.T) {
	store := newCountingStore()
	arts := artifact.NewService(store)
	a, b := saveFile(t, arts, "a.txt", 10), saveFile(t, arts, "b.txt", 20)
	noop := fnTool{name: "noop", run: func(context.Context, tool.Context, map[string]any) (map[string]any, error) {
		return map[string]any{}, nil
	}}
	m := scripted.NewSequence("m", scripted.Call("noop", nil), scripted.Call("noop", nil), scripted.Text("done"), scripted.Text("again"))
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{noop}}), arts, nil)
	msg := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: "compare"}, a, b}}
	if _, err := f.r.RunSync(context.Background(), user, sid, msg, nil); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3", len(reqs))
	}
	for i, req := range reqs {
		if shown, total := shownFiles(req); !shown["a.txt"] || !shown["b.txt"] || total != 30 {
			t.Fatalf("request %d shows %v, %d bytes", i, shown, total)
		}
	}
	if got := store.counts(); got["a.txt"] != 1 || got["b.txt"] != 1 {
		t.Fatalf("loads in one invocation of 3 model calls: %v, want each file once", got)
	}
	f.run(t, "and now?", nil)
	if shown, _ := shownFiles(m.Requests()[3]); !shown["a.txt"] || !shown["b.txt"] {
		t.Fatalf("the next invocation shows %v", shown)
	}
}

// TestFilesOverBudgetNotLoaded checks that once the budget is spent the
// older references are not loaded at all, and that a file over
// MaxFileBytes is noted without taking any of the budget.
func TestFilesOverBudgetNotLoaded(t *testing.T) {
	store := newCountingStore()
	arts := artifact.NewService(store)
	parts := []*genai.Part{
		saveFile(t, arts, "old.txt", 100),
		saveFile(t, arts, "mid.txt", 100),
		saveFile(t, arts, "new.txt", 100),
		saveFile(t, arts, "huge.txt", 1000),
	}
	m := scripted.NewSequence("m", scripted.Text("ok"))
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, MaxFileBytes: 500, MaxRequestFileBytes: 200}), arts, nil)
	if _, err := f.r.RunSync(context.Background(), user, sid, &genai.Content{Role: genai.RoleUser, Parts: parts}, nil); err != nil {
		t.Fatal(err)
	}
	req := m.Requests()[0]
	if shown, total := shownFiles(req); !shown["new.txt"] || !shown["mid.txt"] || total != 200 {
		t.Fatalf("shown %v, %d bytes", shown, total)
	}
	if note := noteFor(req, "huge.txt"); !strings.Contains(note, "over the 500-byte limit") {
		t.Fatalf("note for huge.txt: %q", note)
	}
	if note := noteFor(req, "old.txt"); !strings.Contains(note, "not shown") {
		t.Fatalf("note for old.txt: %q", note)
	}
	if got := store.counts(); got["old.txt"] != 0 {
		t.Fatalf("loads %v: old.txt was loaded though the budget was spent", got)
	}
}

// TestFilesLatestNotCached checks that a reference to the latest version
// shows the version saved during the invocation, on the next model call.
func TestFilesLatestNotCached(t *testing.T) {
	arts := artifact.NewService(newMemArtifacts())
	saveFile(t, arts, "draft.txt", 5)
	bump := fnTool{name: "bump", run: func(ctx context.Context, tc tool.Context, _ map[string]any) (map[string]any, error) {
		_, err := tc.SaveArtifact(ctx, "draft.txt", &genai.Part{InlineData: &genai.Blob{MIMEType: "text/plain", Data: []byte("second")}})
		return map[string]any{}, err
	}}
	m := scripted.NewSequence("m", scripted.Call("bump", nil), scripted.Text("done"))
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{bump}}), arts, nil)
	latest := &genai.Part{FileData: &genai.FileData{FileURI: artifact.URI("draft.txt", artifact.Latest)}}
	if _, err := f.r.RunSync(context.Background(), user, sid, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{latest}}, nil); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls", len(reqs))
	}
	first, second := reqs[0].Contents[0].Parts[0], reqs[1].Contents[0].Parts[0]
	if first.InlineData == nil || string(first.InlineData.Data) != "ddddd" || second.InlineData == nil || string(second.InlineData.Data) != "second" {
		t.Fatalf("the model saw %+v, then %+v", first, second)
	}
}
