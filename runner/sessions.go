package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/session"
)

// Session operations that span the session and artifact services. They
// live here, the lowest level that has both: session.Service knows nothing
// of artifacts.

// DeleteSession deletes a session of the app with its events and its
// session-scoped artifacts, so that a later session with the same id starts
// without any. The user's shared ("user:") artifacts and state are the
// user's, not the session's, and are kept. Deleting a missing session is not
// an error; its leftover artifacts, if any, are still deleted.
//
// The session goes first, then its artifacts: if deleting the artifacts
// fails, the error is returned and calling DeleteSession again finishes the
// job. An invocation still running on the session fails at its next
// commit, and the versions it saved for that commit are deleted with it
// (see [agent.PendingArtifacts]).
func (r *Runner) DeleteSession(ctx context.Context, userID, sessionID string) error {
	if strings.TrimSpace(sessionID) == "" {
		return fmt.Errorf("%w: session id is required", ErrInvalid)
	}
	key := session.Key{AppName: r.cfg.AppName, UserID: userID, SessionID: sessionID}
	if err := r.cfg.Sessions.Delete(ctx, key); err != nil {
		return err
	}
	r.forget(key)
	if r.cfg.Artifacts == nil {
		return nil
	}
	if err := r.cfg.Artifacts.DeleteSession(ctx, key.AppName, key.UserID, key.SessionID); err != nil {
		return fmt.Errorf("runner: delete session %s: %w", sessionID, err)
	}
	return nil
}

// Fork creates the session newSessionID of the same user as a copy of the
// session sessionID up to and including the event upToEventID ("" copies
// every event), as [session.Service.Fork] does, and copies the artifacts
// those events refer to, so that the fork loads them as the source does.
// An empty newSessionID is generated. It returns the new session.
//
// For every session-scoped artifact named in a copied event's
// ArtifactDelta, the versions from 0 up to the highest one the copied
// events record are copied with their numbers, as the source holds them
// now; later versions are not. Versions the source no longer has stay
// missing in the fork, and the numbers stay the same. An artifact a copied
// rewind deleted for good is copied only from its versions recorded after
// that rewind. user: artifacts are shared by the user's sessions, so there
// is nothing to copy.
//
// Fork fails like [session.Service.Fork]; if copying the artifacts fails,
// the new session and its artifacts are deleted.
func (r *Runner) Fork(ctx context.Context, userID, sessionID, upToEventID, newSessionID string) (*session.Session, error) {
	src := session.Key{AppName: r.cfg.AppName, UserID: userID, SessionID: sessionID}
	dst := session.Key{AppName: r.cfg.AppName, UserID: userID, SessionID: newSessionID}
	sess, err := r.cfg.Sessions.Fork(ctx, src, upToEventID, dst)
	if err != nil {
		return nil, err
	}
	if r.cfg.Artifacts == nil {
		return sess, nil
	}
	if err := r.forkArtifacts(ctx, src, sess); err != nil {
		undo := context.WithoutCancel(ctx)
		err = fmt.Errorf("runner: fork %s: %w", sessionID, err)
		if derr := r.DeleteSession(undo, userID, sess.ID()); derr != nil {
			err = errors.Join(err, derr)
		}
		return nil, err
	}
	return sess, nil
}

// forkArtifacts copies into the new session dst the artifact versions its
// events refer to.
func (r *Runner) forkArtifacts(ctx context.Context, src session.Key, dst *session.Session) error {
	svc := r.cfg.Artifacts
	// The new session did not exist, so anything stored under its id is
	// left over from an earlier session of that id: it must not mix in.
	if err := svc.DeleteSession(ctx, dst.AppName(), dst.UserID(), dst.ID()); err != nil {
		return err
	}
	upTo := map[string]int64{} // name -> highest version the copied events record
	for _, ev := range dst.Events() {
		for _, n := range rewindDeleted(ev.CustomMetadata) {
			delete(upTo, n) // its earlier versions are gone for good
		}
		for name, v := range ev.Actions.ArtifactDelta {
			if strings.HasPrefix(name, artifact.PrefixUser) {
				continue
			}
			if old, ok := upTo[name]; !ok || v > old {
				upTo[name] = v
			}
		}
	}
	names := make([]string, 0, len(upTo))
	for n := range upTo {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		from := artifact.Ref{AppName: src.AppName, UserID: src.UserID, SessionID: src.SessionID, Name: name}
		to := artifact.Ref{AppName: dst.AppName(), UserID: dst.UserID(), SessionID: dst.ID(), Name: name}
		if err := copyVersions(ctx, svc, from, to, upTo[name]); err != nil {
			return err
		}
	}
	return nil
}

// copyVersions copies versions 0..last of from into the empty artifact to,
// keeping their numbers: a version from lacks is saved as a placeholder and
// deleted once the versions after it are saved (deleting the newest version
// would free its number).
func copyVersions(ctx context.Context, svc *artifact.Service, from, to artifact.Ref, last int64) error {
	var holes []int64
	for v := int64(0); v <= last; v++ {
		part, err := svc.Load(ctx, from, v)
		if errors.Is(err, artifact.ErrNotFound) {
			part, err = genai.NewPartFromText("missing version"), nil
			holes = append(holes, v)
		}
		if err != nil {
			return err
		}
		got, err := svc.Save(ctx, to, part)
		if err != nil {
			return err
		}
		if got != v {
			return fmt.Errorf("copy of %s version %d was stored as version %d", from.Name, v, got)
		}
	}
	for _, v := range holes {
		if err := svc.DeleteVersion(ctx, to, v); err != nil {
			return err
		}
	}
	return nil
}

// rewindDeleted returns the names a rewind event lists as deleted: a
// []any once committed, or a []string as Rewind builds it.
func rewindDeleted(meta map[string]any) []string {
	switch names := meta[MetadataRewindDeletedArtifacts].(type) {
	case []string:
		return names
	case []any:
		out := make([]string, 0, len(names))
		for _, n := range names {
			if s, ok := n.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// ExpireSessions applies the app's retention (Config.SessionTTL): it
// deletes every session of the app, of every user, whose last update (its
// last event, or its creation) is older than the TTL at now, each with its
// events, session state and session-scoped artifacts, as DeleteSession
// does; app and user state, and the user's "user:" artifacts, are kept. It
// returns how many sessions it deleted. With no TTL it does nothing.
//
// Each session is checked again and deleted under its lease
// (session.Service.DeleteIfIdle), artifacts first, so a session that a
// process leasing it has just used is kept, and a failure leaves the
// session to the next run, never artifacts without their session. It
// stops at the first error, which it returns with the count so far; it is
// safe to run concurrently with invocations and with itself.
func (r *Runner) ExpireSessions(ctx context.Context, now time.Time) (int, error) {
	if r.cfg.SessionTTL <= 0 {
		return 0, nil
	}
	cutoff := now.Add(-r.cfg.SessionTTL)
	svc := r.cfg.Sessions
	n := 0
	for key, err := range svc.Expired(ctx, r.cfg.AppName, cutoff) {
		if err != nil {
			return n, fmt.Errorf("runner: expire sessions: %w", err)
		}
		var artifacts func(context.Context) error
		if r.cfg.Artifacts != nil {
			artifacts = func(ctx context.Context) error {
				return r.cfg.Artifacts.DeleteSession(ctx, key.AppName, key.UserID, key.SessionID)
			}
		}
		deleted, err := svc.DeleteIfIdle(ctx, key, cutoff, artifacts)
		if err != nil {
			return n, fmt.Errorf("runner: expire sessions: %w", err)
		}
		if deleted {
			r.forget(key)
			n++
		}
	}
	return n, nil
}
