package agent

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/session"
)

// PendingArtifacts makes artifact versions part of the commit of the events
// that record them. Contexts report every version they save (see
// [CallbackContext.SaveArtifact]); the committer reports every event it
// commits; [PendingArtifacts.Discard] then deletes exactly the versions no
// committed event covers. A version is covered when a committed event's
// ArtifactDelta records it or a later version of the same artifact saved
// through the same PendingArtifacts (an artifact saved twice in one step
// keeps both versions, as history of the recorded one).
//
// A saved version is stored at once, so the invocation that saved it reads
// it back immediately, and other readers can see it before its event is
// committed. If the commit fails, or the invocation ends before an event
// records the version (an error, a cancellation, a consumer that stops
// reading), Discard removes it, and removing the newest version frees its
// number for the next save. Hiding versions until the commit publishes them
// would need a second write after the commit, which a crash could lose,
// leaving a committed event that names an invisible version; deleting on
// failure can only leave, after a crash, a version that no event records.
//
// The zero value is ready to use; a nil *PendingArtifacts records nothing.
// It is safe for concurrent use.
type PendingArtifacts struct {
	mu        sync.Mutex
	saved     []savedVersion
	committed map[artifact.Ref]int64 // highest version recorded by a committed event
}

type savedVersion struct {
	ref     artifact.Ref
	version int64
}

// norm returns ref as one key per stored artifact: user-scoped artifacts
// belong to no session.
func norm(ref artifact.Ref) artifact.Ref {
	if strings.HasPrefix(ref.Name, artifact.PrefixUser) {
		ref.SessionID = ""
	}
	return ref
}

// Saved records that version of ref was saved and awaits its event.
func (p *PendingArtifacts) Saved(ref artifact.Ref, version int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.saved = append(p.saved, savedVersion{norm(ref), version})
	p.mu.Unlock()
}

// Committed records that an event of the session with the given artifact
// delta was committed.
func (p *PendingArtifacts) Committed(key session.Key, delta map[string]int64) {
	if p == nil || len(delta) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.committed == nil {
		p.committed = map[artifact.Ref]int64{}
	}
	for name, v := range delta {
		ref := norm(artifact.Ref{AppName: key.AppName, UserID: key.UserID, SessionID: key.SessionID, Name: name})
		if c, ok := p.committed[ref]; !ok || v > c {
			p.committed[ref] = v
		}
	}
}

// Discard deletes, through svc, every saved version that no committed event
// covers, and forgets them. Call it once nothing more will be committed for
// the saves recorded so far: after a failed commit, or when the invocation
// ends. It tries every version, even once ctx is canceled (the deletions
// clean up after it), and returns the errors joined.
func (p *PendingArtifacts) Discard(ctx context.Context, svc *artifact.Service) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	var drop []savedVersion
	for _, s := range p.saved {
		if c, ok := p.committed[s.ref]; !ok || s.version > c {
			drop = append(drop, s)
		}
	}
	p.saved = nil
	p.mu.Unlock()
	if svc == nil || len(drop) == 0 {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	var errs []error
	for _, s := range drop {
		if err := svc.DeleteVersion(ctx, s.ref, s.version); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
