package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sync"

	"github.com/loomkit/loom/server"
)

// Bounds of the agent builder's files: one file read, and the drafts of
// all apps together (kept in memory until saved or cancelled).
const (
	maxBuilderFileBytes  = 4 << 20
	maxBuilderDraftBytes = 16 << 20
)

// appFiles gives ADK's agent builder the files of the YAML apps
// (server.AppFiles). Reads and writes stay inside each app's directory
// (os.Root: no symbolic link leads out of it). A draft, the builder's
// edit before it is saved, is kept in memory: reading a draft file the
// draft does not hold reads the app's own.
type appFiles struct {
	apps map[string]*fileApp

	mu     sync.Mutex
	drafts map[string]map[string][]byte // app → path → content
	size   int64                        // bytes held by drafts
}

var _ server.AppFiles = (*appFiles)(nil)

// appFilesOf returns the builder's files of the file apps among apps, or
// nil when there are none.
func appFilesOf(apps []App) server.AppFiles {
	files := &appFiles{apps: map[string]*fileApp{}, drafts: map[string]map[string][]byte{}}
	for _, f := range fileAppsOf(apps) {
		files.apps[f.name] = f
	}
	if len(files.apps) == 0 {
		return nil
	}
	return files
}

// ReadAppFile implements server.AppFiles.
func (a *appFiles) ReadAppFile(app, p string, draft bool) ([]byte, bool, error) {
	f := a.apps[app]
	if f == nil {
		return nil, false, nil
	}
	if draft {
		a.mu.Lock()
		content, ok := a.drafts[app][p]
		a.mu.Unlock()
		if ok {
			return content, true, nil
		}
	}
	root, err := os.OpenRoot(f.dir)
	if err != nil {
		return nil, false, err
	}
	defer root.Close()
	file, err := root.Open(p)
	if err != nil {
		return nil, false, nil // missing, or leads out of the app
	}
	defer file.Close()
	if fi, err := file.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, false, nil
	}
	content, err := io.ReadAll(io.LimitReader(file, maxBuilderFileBytes+1))
	if err != nil {
		return nil, false, err
	}
	if len(content) > maxBuilderFileBytes {
		return nil, false, fmt.Errorf("%s of %s is larger than %d bytes", p, app, maxBuilderFileBytes)
	}
	return content, true, nil
}

// SaveAppFiles implements server.AppFiles.
func (a *appFiles) SaveAppFiles(app string, files map[string][]byte, draft bool) error {
	f := a.apps[app]
	if f == nil {
		return fmt.Errorf("%s is not an app defined by files", app)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if draft {
		d := a.drafts[app]
		if d == nil {
			d = map[string][]byte{}
			a.drafts[app] = d
		}
		for p, content := range files {
			grow := int64(len(content)) - int64(len(d[p]))
			if a.size+grow > maxBuilderDraftBytes {
				return fmt.Errorf("the drafts would hold more than %d bytes", maxBuilderDraftBytes)
			}
			d[p], a.size = content, a.size+grow
		}
		return nil
	}
	all := map[string][]byte{}
	for p, content := range a.drafts[app] {
		all[p] = content
	}
	for p, content := range files {
		all[p] = content
	}
	root, err := os.OpenRoot(f.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	var errs []error
	for p, content := range all {
		if dir := path.Dir(p); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if err := writeInRoot(root, p, content); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	a.dropDraft(app)
	return nil
}

// writeInRoot replaces the file p of root with content through a temporary
// file, so that the app, which reloads on change, never reads half a file.
func writeInRoot(root *os.Root, p string, content []byte) error {
	tmp := p + ".loom-builder.tmp"
	if err := root.WriteFile(tmp, content, 0o644); err != nil {
		return err
	}
	if err := root.Rename(tmp, p); err != nil {
		_ = root.Remove(tmp)
		return err
	}
	return nil
}

// CancelDraft implements server.AppFiles.
func (a *appFiles) CancelDraft(app string) error {
	if a.apps[app] == nil {
		return fmt.Errorf("%s is not an app defined by files: %w", app, fs.ErrNotExist)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.dropDraft(app)
	return nil
}

// dropDraft forgets the draft of app; the caller holds a.mu.
func (a *appFiles) dropDraft(app string) {
	for _, content := range a.drafts[app] {
		a.size -= int64(len(content))
	}
	delete(a.drafts, app)
}
