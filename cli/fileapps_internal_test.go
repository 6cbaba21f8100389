package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
)

// writeAppFile writes a file of a test app, creating its directory.
func writeAppFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeBigApp writes an app of n YAML files: a root agent whose sub-agents
// are the other files, each with an instruction of about a kilobyte.
func writeBigApp(t testing.TB, dir string, n int) {
	t.Helper()
	var root strings.Builder
	root.WriteString("agent_class: SequentialAgent\nname: root\nsub_agents:\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&root, "  - config_path: agents/a%02d.yaml\n", i)
		writeAppFile(t, filepath.Join(dir, "agents", fmt.Sprintf("a%02d.yaml", i)),
			fmt.Sprintf("name: a%02d\ninstruction: |\n  %s\n", i, strings.Repeat("Answer briefly. ", 64)))
	}
	writeAppFile(t, filepath.Join(dir, agentconfig.RootFile), root.String())
}

// startTestApp starts the file app of dir with scripted models and a
// discarded log. Its fingerprint compares file times with clock, and reads
// files through the returned counter.
func startTestApp(t testing.TB, dir string, clock func() time.Time) (*fileApp, *readCounter) {
	t.Helper()
	f := newFileApp(filepath.Base(dir), dir)
	reads := &readCounter{}
	f.fp.read, f.fp.now = reads.read, clock
	opts := agentconfig.Options{Model: func(name string) (model.LLM, error) { return scripted.NewSequence(name), nil }}
	f.start(opts, &lockedWriter{w: io.Discard})
	t.Cleanup(f.close)
	if f.cur == nil {
		t.Fatalf("the app does not load: %v", f.err)
	}
	return f, reads
}

// readCounter counts the files a fingerprint reads.
type readCounter struct {
	mu    sync.Mutex
	paths []string
}

func (c *readCounter) read(path string) ([]byte, error) {
	c.mu.Lock()
	c.paths = append(c.paths, path)
	c.mu.Unlock()
	return readConfigFile(path)
}

// take returns the files read since the last take.
func (c *readCounter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.paths
	c.paths = nil
	return p
}

// later is a clock an hour ahead, at which the files a test has just
// written are old enough for their metadata to be trusted.
func later() time.Time { return time.Now().Add(time.Hour) }

// BenchmarkFileAppRefresh is the check at the start of every turn of a
// file app of 50 YAML files none of which changed.
func BenchmarkFileAppRefresh(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "big")
	writeBigApp(b, dir, 50)
	f, _ := startTestApp(b, dir, later)
	want := f.cur.Root
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if f.refresh(ctx) != want {
			b.Fatal("the app reloaded")
		}
	}
}

// rootName is the name of the serving version's root agent.
func rootName(t *testing.T, f *fileApp) string {
	t.Helper()
	a := f.refresh(context.Background())
	if a == nil {
		t.Fatalf("no version serves: %v", f.err)
	}
	return a.Name()
}

// TestRefreshUnchangedReadsNoFile: a turn of an app none of whose files
// changed stats the files and reads none.
func TestRefreshUnchangedReadsNoFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "big")
	writeBigApp(t, dir, 12)
	f, reads := startTestApp(t, dir, later)
	if got := reads.take(); len(got) != 12 {
		t.Fatalf("the first look read %d files, want all 12: %v", len(got), got)
	}
	cur := f.cur
	for range 3 {
		if rootName(t, f) != "root" {
			t.Fatal("wrong root")
		}
	}
	if got := reads.take(); len(got) != 0 {
		t.Errorf("unchanged files were read: %v", got)
	}
	if f.cur != cur {
		t.Error("the app reloaded without an edit")
	}
}

// TestRefreshSameSizeEdit: an edit that keeps the size and puts the
// modification time back is seen, by the change time where the system
// has one, and by the file's recent change within racyWindow everywhere.
func TestRefreshSameSizeEdit(t *testing.T) {
	edit := func(t *testing.T, root string) {
		t.Helper()
		fi, err := os.Stat(root)
		if err != nil {
			t.Fatal(err)
		}
		writeAppFile(t, root, "name: helpex\ninstruction: Help.\n")
		if err := os.Chtimes(root, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
		if fj, _ := os.Stat(root); fj.Size() != fi.Size() || !fj.ModTime().Equal(fi.ModTime()) {
			t.Fatalf("the edit changed the size or time: %v %v", fi, fj)
		}
	}
	t.Run("change time", func(t *testing.T) {
		if !haveChangeTime {
			t.Skip("stamps hold no change time on this system")
		}
		root := filepath.Join(t.TempDir(), "helper", agentconfig.RootFile)
		writeAppFile(t, root, "name: helper\ninstruction: Help.\n")
		f, reads := startTestApp(t, filepath.Dir(root), later)
		reads.take()
		rootName(t, f)
		if got := reads.take(); len(got) != 0 {
			t.Fatalf("an unchanged file was read: %v", got)
		}
		edit(t, root)
		if got := rootName(t, f); got != "helpex" {
			t.Errorf("root after a same-size edit = %s, want helpex", got)
		}
	})
}

// TestRefreshRecentFileIsReadAgain: a file changed within racyWindow of a
// look is read again at the next look even when its metadata is the same,
// since a write in the same timestamp tick as the look leaves the metadata
// as it was; once older, it is read once more, then trusted.
func TestRefreshRecentFileIsReadAgain(t *testing.T) {
	root := filepath.Join(t.TempDir(), "helper", agentconfig.RootFile)
	writeAppFile(t, root, "name: helper\ninstruction: Help.\n")
	fi, err := os.Stat(root)
	if err != nil {
		t.Fatal(err)
	}
	changed := fi.ModTime()
	if ct, ok := sysStampOf(fi).changeTime(); ok && ct > changed.UnixNano() {
		changed = time.Unix(0, ct)
	}
	now := changed
	f, reads := startTestApp(t, filepath.Dir(root), func() time.Time { return now })
	for _, step := range []struct {
		now   time.Time
		reads int
	}{
		{changed, 1},                             // recent at the first look
		{changed.Add(racyWindow), 1},             // still recent at the last
		{changed.Add(racyWindow + 1), 1},         // old now, read once more
		{changed.Add(racyWindow + 1), 0},         // trusted
		{changed.Add(racyWindow + time.Hour), 0}, // trusted
	} {
		reads.take()
		now = step.now
		rootName(t, f)
		if got := reads.take(); len(got) != step.reads {
			t.Fatalf("at %v after the change: read %v, want %d reads", step.now.Sub(changed), got, step.reads)
		}
	}

	// A write in the same tick as a look: the stamp stays the one the
	// look saw (forged here, since this system's clock is finer), and the
	// file is read again because the stamp was recent at that look.
	now = changed.Add(time.Hour)
	writeAppFile(t, root, "name: helpex\ninstruction: Help.\n")
	fj, err := os.Stat(root)
	if err != nil {
		t.Fatal(err)
	}
	old := f.fp.files[root]
	f.fp.files[root] = fileSum{stamp: fileStamp{size: fj.Size(), mtime: fj.ModTime().UnixNano(), mode: fj.Mode(), sys: sysStampOf(fj)}, digest: old.digest}
	if got := rootName(t, f); got != "helpex" {
		t.Errorf("root after a write in the look's tick = %s, want helpex", got)
	}
}

// TestRefreshTouchedFile: a file whose times change but whose contents do
// not is read again, and the app does not reload.
func TestRefreshTouchedFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "big")
	writeBigApp(t, dir, 5)
	f, reads := startTestApp(t, dir, later)
	cur := f.cur
	touched := filepath.Join(dir, "agents", "a02.yaml")
	when := time.Now().Add(-time.Minute)
	if err := os.Chtimes(touched, when, when); err != nil {
		t.Fatal(err)
	}
	reads.take()
	rootName(t, f)
	if got := reads.take(); len(got) != 1 || got[0] != touched {
		t.Errorf("read %v, want only %s", got, touched)
	}
	if f.cur != cur {
		t.Error("the app reloaded after a touch")
	}
}

// TestRefreshAddedAndRemovedFiles: a YAML file added or removed in a
// sub-directory makes the next turn load the app again; the look reads
// only the added file.
func TestRefreshAddedAndRemovedFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "big")
	writeBigApp(t, dir, 5)
	f, reads := startTestApp(t, dir, later)
	cur := f.cur
	added := filepath.Join(dir, "agents", "more", "extra.yml")
	writeAppFile(t, added, "name: extra\ninstruction: More.\n")
	reads.take()
	rootName(t, f)
	if got := reads.take(); len(got) != 1 || got[0] != added {
		t.Errorf("read %v, want only %s", got, added)
	}
	if f.cur == cur {
		t.Fatal("an added file did not reload the app")
	}
	cur = f.cur
	if err := os.Remove(added); err != nil {
		t.Fatal(err)
	}
	rootName(t, f)
	if got := reads.take(); len(got) != 0 {
		t.Errorf("read %v after a removal, want none", got)
	}
	if f.cur == cur {
		t.Fatal("a removed file did not reload the app")
	}
	cur = f.cur
	rootName(t, f)
	if f.cur != cur {
		t.Error("the app reloaded without an edit")
	}
}

// TestRefreshSymlinkedFiles: files reached through symbolic links (as
// mounted config volumes do, switching a link to a new hidden directory
// on update) are judged by the files the links lead to.
func TestRefreshSymlinkedFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "helper")
	writeAppFile(t, filepath.Join(dir, ".v1", agentconfig.RootFile), "name: helper\ninstruction: Help.\n")
	writeAppFile(t, filepath.Join(dir, ".v2", agentconfig.RootFile), "name: helpex\ninstruction: Help.\n")
	if err := os.Symlink(".v1", filepath.Join(dir, ".data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(".data", agentconfig.RootFile), filepath.Join(dir, agentconfig.RootFile)); err != nil {
		t.Fatal(err)
	}
	f, reads := startTestApp(t, dir, later)
	if got := rootName(t, f); got != "helper" {
		t.Fatalf("root = %s, want helper", got)
	}
	reads.take()
	rootName(t, f)
	if got := reads.take(); len(got) != 0 {
		t.Errorf("read %v, want none", got)
	}
	// Switch the link to the other version (rename is atomic).
	tmp := filepath.Join(dir, ".data.new")
	if err := os.Symlink(".v2", tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, ".data")); err != nil {
		t.Fatal(err)
	}
	if got := rootName(t, f); got != "helpex" {
		t.Errorf("root after the link switched = %s, want helpex", got)
	}
}

// TestRefreshConcurrent: turns refreshing an app at once while its files
// are edited (run under -race) all get a version that loads, and the
// first refresh after the last edit gets the last version.
func TestRefreshConcurrent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "big")
	writeBigApp(t, dir, 8)
	f, _ := startTestApp(t, dir, later)
	root := filepath.Join(dir, agentconfig.RootFile)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if a := f.refresh(context.Background()); a == nil {
					t.Error("no version serves")
					return
				}
				_ = f.status()
			}
		})
	}
	for i := range 20 {
		writeAppFile(t, root, fmt.Sprintf("name: v%d\ninstruction: Help.\n", i))
	}
	close(stop)
	wg.Wait()
	if got := rootName(t, f); got != "v19" {
		t.Errorf("root after the last edit = %s, want v19", got)
	}
}
