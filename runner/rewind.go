package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
)

// MetadataRewindDeletedArtifacts is the CustomMetadata key under which a
// rewind event lists, sorted, the session artifacts it deleted because
// they did not exist before the target invocation. Committed, as every
// free-form value of an event, the list is in its JSON form: a []any of
// strings.
const MetadataRewindDeletedArtifacts = "rewindDeletedArtifacts"

// Rewind takes a session back to just before the invocation
// beforeInvocationID. It appends one event, authored by the user under a
// new invocation id, whose RewindBeforeInvocationID names the target and
// whose actions restore what the target and later invocations changed:
//
//   - session-scoped state: every key changed from the target's first event
//     on gets the value the earlier events left it with, or is deleted if no
//     earlier event set it (so a key given only in the session's initial
//     state and changed later is deleted: initial state is in no event);
//   - session artifacts: every artifact saved from the target on gets the
//     version it had before the target saved again as its newest version
//     (recorded in the event's ArtifactDelta), or is deleted if it had no
//     version before the target (listed in the event's CustomMetadata under
//     [MetadataRewindDeletedArtifacts]; its versions are gone for good).
//
// app:, user: and temp: state and user: artifacts are shared with other
// sessions and left alone. No event is deleted: [event.ModelView] hides the
// rewound events, and the rewind event itself, from models.
//
// Rewind holds the session's invocation lock, so it waits for a running
// invocation to end. It returns the committed event. An unknown invocation
// id fails with an error wrapping [ErrInvalid] and changes nothing. Plugins
// do not see the rewind event: it belongs to no invocation.
func (r *Runner) Rewind(ctx context.Context, userID, sessionID, beforeInvocationID string) (*event.Event, error) {
	if beforeInvocationID == "" {
		return nil, fmt.Errorf("%w: rewind needs an invocation id", ErrInvalid)
	}
	key := session.Key{AppName: r.cfg.AppName, UserID: userID, SessionID: sessionID}
	var ev *event.Event
	err := r.withSession(ctx, userID, sessionID, false, func(sess *session.Session) error {
		events := sess.Events()
		start := slices.IndexFunc(events, func(e *event.Event) bool { return e.InvocationID == beforeInvocationID })
		if start < 0 {
			return fmt.Errorf("%w: session %s has no invocation %q", ErrInvalid, sessionID, beforeInvocationID)
		}
		before, since := events[:start], events[start:]

		ev = event.New(event.NewInvocationID(), event.AuthorUser)
		ev.Actions.RewindBeforeInvocationID = beforeInvocationID
		ev.Actions.StateDelta = session.RewindDelta(before, since)
		// The restored versions are saved before the event that records
		// them, and removed if it is not committed.
		pending := &agent.PendingArtifacts{}
		defer func() { _ = r.discardArtifacts(ctx, pending) }()
		delta, deleted, err := r.rewindArtifacts(ctx, key, before, since, pending)
		if err != nil {
			return err
		}
		ev.Actions.ArtifactDelta = delta
		if len(deleted) > 0 {
			ev.CustomMetadata = map[string]any{MetadataRewindDeletedArtifacts: deleted}
		}
		if err := r.commit(ctx, sess, ev, pending); err != nil {
			ev = nil
			return fmt.Errorf("runner: rewind: %w", err)
		}
		// Deleting is the one step that cannot be redone, so it comes only
		// once the event that records it is committed.
		for _, name := range deleted {
			ref := artifact.Ref{AppName: key.AppName, UserID: key.UserID, SessionID: key.SessionID, Name: name}
			if err := r.cfg.Artifacts.Delete(ctx, ref); err != nil {
				return fmt.Errorf("runner: rewind: %w", err)
			}
		}
		return nil
	})
	return ev, err
}

// rewindArtifacts saves again the versions that session artifacts changed
// in since had before it, and returns the new versions and the sorted names
// of the artifacts to delete.
func (r *Runner) rewindArtifacts(ctx context.Context, key session.Key, before, since []*event.Event, pending *agent.PendingArtifacts) (map[string]int64, []string, error) {
	changed := map[string]bool{}
	for _, e := range since {
		for name := range e.Actions.ArtifactDelta {
			if !strings.HasPrefix(name, artifact.PrefixUser) {
				changed[name] = true
			}
		}
	}
	if len(changed) == 0 {
		return nil, nil, nil
	}
	if r.cfg.Artifacts == nil {
		return nil, nil, fmt.Errorf("%w: rewind restores artifacts but the runner has no artifact service", ErrInvalid)
	}
	old := map[string]int64{}
	for _, e := range before {
		for name, v := range e.Actions.ArtifactDelta {
			if changed[name] {
				old[name] = v
			}
		}
	}
	var delta map[string]int64
	var deleted []string
	for _, name := range sortedNames(changed) {
		v, ok := old[name]
		if !ok {
			deleted = append(deleted, name)
			continue
		}
		ref := artifact.Ref{AppName: key.AppName, UserID: key.UserID, SessionID: key.SessionID, Name: name}
		part, err := r.cfg.Artifacts.Load(ctx, ref, v)
		if errors.Is(err, artifact.ErrNotFound) {
			// The old version is gone (deleted outside the runner): the
			// artifact cannot be restored, so it goes like a new one.
			deleted = append(deleted, name)
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("runner: rewind: %w", err)
		}
		nv, err := r.cfg.Artifacts.Save(ctx, ref, part)
		if err != nil {
			return nil, nil, fmt.Errorf("runner: rewind: %w", err)
		}
		pending.Saved(ref, nv)
		if delta == nil {
			delta = map[string]int64{}
		}
		delta[name] = nv
	}
	return delta, deleted, nil
}

func sortedNames(set map[string]bool) []string {
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
