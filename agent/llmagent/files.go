package llmagent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/model"
)

// DefaultMaxFileBytes is the largest artifact sent to a model as content
// when Config.MaxFileBytes is zero.
const DefaultMaxFileBytes = 10 << 20

// DefaultMaxRequestFileBytes is the most artifact bytes shown to a model
// in one request when Config.MaxRequestFileBytes is zero: two files of the
// default largest size.
const DefaultMaxRequestFileBytes = 2 * DefaultMaxFileBytes

// fileCache keeps, for one run of the agent (the model calls of one
// invocation's tool loop), the artifact versions the latest request
// showed, with the sizes of the versions it looked at, so that the next
// model call of the loop does not load them again. Only exact versions are
// kept: a version, once saved, does not change, while a reference to the
// latest version may name a newer one on the next call.
//
// Each request replaces the cache with what it used, so it holds at most
// the artifact bytes of one request (MaxRequestFileBytes), and it lives
// only as long as the run: nothing outlives the invocation, so an artifact
// deleted between invocations is not shown again, and no memory is held
// for the session between its turns. A later invocation loads the files
// it shows once more.
type fileCache struct {
	files map[fileVersion]loadedFile
}

type fileVersion struct {
	name    string
	version int64
}

type loadedFile struct {
	part *genai.Part // the artifact as loaded; nil when it was not shown
	size int64
}

// fileLimits returns the limit on one file and the budget of one request
// for artifact bytes shown to the model; negative means none.
func (a *Agent) fileLimits() (limit, budget int64) {
	limit, budget = a.cfg.MaxFileBytes, a.cfg.MaxRequestFileBytes
	if limit == 0 {
		limit = DefaultMaxFileBytes
	}
	if budget == 0 {
		budget = DefaultMaxRequestFileBytes
	}
	return limit, budget
}

// resolveArtifacts replaces the file data parts of contents that refer to
// session artifacts (artifact.URI) with the artifacts' content: inline
// data, or text. An artifact over the size limit, one that does not fit in
// what is left of the request's budget, or one that cannot be loaded,
// becomes a text part saying so. The budget goes to the newest references
// first: contents and their parts are taken from the last back, and once
// the budget is spent the older references are not loaded at all. The
// outcome depends only on the references and the artifacts, not on what
// files (the run's cache, or nil) already holds. Contents it does not
// change are shared. The first skip contents are known to hold no
// reference and are not looked at.
func (a *Agent) resolveArtifacts(ctx context.Context, inv *agent.Invocation, req *model.Request, skip int, files *fileCache) error {
	r := fileResolver{a: a, inv: inv}
	r.limit, r.budget = a.fileLimits()
	r.left = r.budget
	if files != nil {
		r.prev = files.files
	}
	var out []*genai.Content
	for i := len(req.Contents) - 1; i >= skip; i-- {
		c := req.Contents[i]
		if c == nil || !hasArtifactRef(c) {
			continue
		}
		if out == nil {
			out = slices.Clone(req.Contents)
		}
		cp := &genai.Content{Role: c.Role, Parts: slices.Clone(c.Parts)}
		for j := len(cp.Parts) - 1; j >= 0; j-- {
			name, version, ok := artifactRef(cp.Parts[j])
			if !ok {
				continue
			}
			part, err := r.show(ctx, name, version)
			if err != nil {
				return err
			}
			cp.Parts[j] = part
		}
		out[i] = cp
	}
	if out != nil {
		req.Contents = out
	}
	if files != nil {
		files.files = r.next
	}
	return nil
}

// fileResolver decides, reference by reference from the newest, the part
// that shows each artifact to the model.
type fileResolver struct {
	a      *Agent
	inv    *agent.Invocation
	limit  int64 // on one file; negative for none
	budget int64 // of the request; negative for none
	left   int64 // of the budget
	prev   map[fileVersion]loadedFile
	next   map[fileVersion]loadedFile // what this request used
}

// show returns the part that shows one reference. Only failures of the
// artifact service itself are errors.
func (r *fileResolver) show(ctx context.Context, name string, version int64) (*genai.Part, error) {
	if r.budget >= 0 && r.left == 0 {
		return r.overBudget(name), nil // spent: nothing more is loaded
	}
	key := fileVersion{name, version}
	f, known := r.next[key] // referred to twice
	if !known {
		f, known = r.prev[key]
	}
	if !known || (f.part == nil && r.fits(f.size)) {
		p, note, err := r.a.loadArtifact(ctx, r.inv, name, version)
		if err != nil || note != nil {
			return note, err
		}
		f = loadedFile{part: p, size: partSize(p)}
	}
	switch {
	case r.limit >= 0 && f.size > r.limit:
		r.keep(key, loadedFile{size: f.size})
		return &genai.Part{Text: fmt.Sprintf("[File %q is %d bytes, over the %d-byte limit for files shown to the model; it is not shown]", name, f.size, r.limit)}, nil
	case r.budget >= 0 && f.size > r.left:
		r.keep(key, loadedFile{size: f.size})
		return r.overBudget(name), nil
	}
	if r.budget >= 0 {
		r.left -= f.size
	}
	r.keep(key, f)
	return forModel(name, f.part), nil
}

// fits reports whether a file of size bytes is shown.
func (r *fileResolver) fits(size int64) bool {
	return (r.limit < 0 || size <= r.limit) && (r.budget < 0 || size <= r.left)
}

func (r *fileResolver) overBudget(name string) *genai.Part {
	return &genai.Part{Text: fmt.Sprintf("[File %q is not shown: it does not fit in the %d bytes of files shown to the model in one request, which go to the newest files first]", name, r.budget)}
}

// keep records a file this request used, for the next model call of the
// run; references to the latest version are not kept.
func (r *fileResolver) keep(key fileVersion, f loadedFile) {
	if key.version < 0 {
		return
	}
	if had, ok := r.next[key]; ok && had.part != nil {
		return // shown by a newer reference
	}
	if r.next == nil {
		r.next = map[fileVersion]loadedFile{}
	}
	r.next[key] = f
}

// loadArtifact loads a version of an artifact of the session. An artifact
// that cannot be shown (no service, not found) gives a note instead; only
// failures of the artifact service itself are errors.
func (a *Agent) loadArtifact(ctx context.Context, inv *agent.Invocation, name string, version int64) (*genai.Part, *genai.Part, error) {
	svc := inv.Artifacts()
	if svc == nil {
		return nil, &genai.Part{Text: fmt.Sprintf("[File %q cannot be shown: no artifact service]", name)}, nil
	}
	s := inv.Session()
	p, err := svc.Load(ctx, artifact.Ref{AppName: s.AppName(), UserID: s.UserID(), SessionID: s.ID(), Name: name}, version)
	switch {
	case errors.Is(err, artifact.ErrNotFound) || errors.Is(err, artifact.ErrInvalid) || (err == nil && p == nil):
		return nil, &genai.Part{Text: fmt.Sprintf("[File %q is not available]", name)}, nil
	case err != nil:
		return nil, nil, fmt.Errorf("llmagent: %s: load file %q for the model: %w", a.Name(), name, err)
	}
	return p, nil, nil
}

// partSize is the size of an artifact as the limits count it: its data
// or its text.
func partSize(p *genai.Part) int64 {
	if p.InlineData != nil {
		return int64(len(p.InlineData.Data))
	}
	return int64(len(p.Text))
}

// forModel returns a new part showing a loaded artifact to the model; the
// bytes are shared with the artifact.
func forModel(name string, p *genai.Part) *genai.Part {
	switch {
	case p.InlineData != nil:
		d := *p.InlineData
		if d.DisplayName == "" {
			d.DisplayName = name
		}
		return &genai.Part{InlineData: &d}
	case p.FileData != nil:
		d := *p.FileData
		return &genai.Part{FileData: &d}
	}
	return &genai.Part{Text: p.Text}
}

func artifactRef(p *genai.Part) (string, int64, bool) {
	if p == nil || p.FileData == nil || !strings.HasPrefix(p.FileData.FileURI, artifact.URIScheme+":") {
		return "", 0, false
	}
	return artifact.ParseURI(p.FileData.FileURI)
}

func hasArtifactRef(c *genai.Content) bool {
	for _, p := range c.Parts {
		if _, _, ok := artifactRef(p); ok {
			return true
		}
	}
	return false
}
