// Package artifact stores versioned binary artifacts (files, images, any
// genai.Part) for sessions.
//
// [Service] owns the rules: names are validated, versions start at 0 and
// increase by one with every save, and a name with the "user:" prefix lives
// in the user's namespace, shared by all of that user's sessions in the app.
// Single versions can be deleted ([Service.DeleteVersion]; the runner does
// so for versions whose event was not committed), and so can all of one
// session's artifacts ([Service.DeleteSession], used when the session is
// deleted). Backends implement the narrow [Store] interface; memory, local
// directory and object-storage stores are provided in sub-packages.
package artifact

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"google.golang.org/genai"
)

// Errors returned by the service and by stores.
var (
	// ErrNotFound reports a missing artifact or version.
	ErrNotFound = errors.New("artifact not found")
	// ErrInvalid reports a malformed request, such as an empty name.
	ErrInvalid = errors.New("invalid artifact request")
)

// PrefixUser marks artifact names shared by all sessions of a user.
const PrefixUser = "user:"

// Latest selects the newest version in Load.
const Latest int64 = -1

// Ref names an artifact as callers see it.
type Ref struct {
	AppName   string
	UserID    string
	SessionID string
	// Name is the artifact's file name; "user:" names are user-scoped.
	Name string
}

// Key names an artifact as a Store sees it: SessionID is empty for
// user-scoped artifacts.
type Key struct {
	AppName   string
	UserID    string
	SessionID string
	Name      string
}

// Store is the storage driver behind a Service. Implementations must be safe
// for concurrent use and must not retain or hand out memory they share with
// callers.
type Store interface {
	// Save stores part as the next version of key (0 for a new artifact)
	// and returns that version. Concurrent saves get distinct versions.
	Save(ctx context.Context, key Key, part *genai.Part) (int64, error)
	// Load returns the given version, or the latest for Latest. It returns
	// an error wrapping ErrNotFound if there is none.
	Load(ctx context.Context, key Key, version int64) (*genai.Part, error)
	// List returns the names stored under exactly (app, user, session),
	// sorted. session "" lists the user-scoped names.
	List(ctx context.Context, app, user, session string) ([]string, error)
	// Versions returns the versions of key in increasing order; none (an
	// empty list) when the artifact does not exist.
	Versions(ctx context.Context, key Key) ([]int64, error)
	// Delete removes every version of key. Deleting a missing artifact is
	// not an error.
	Delete(ctx context.Context, key Key) error
	// DeleteVersion removes one version of key; the other versions keep
	// their numbers, and when the latest is removed the next save may reuse
	// its number. An artifact left without versions no longer exists.
	// Deleting a missing version is not an error.
	DeleteVersion(ctx context.Context, key Key, version int64) error
	// DeleteSession removes every artifact stored under exactly (app, user,
	// session), with all their versions; session is never "" (the user
	// scope is not deleted this way). Deleting a session without artifacts
	// is not an error.
	DeleteSession(ctx context.Context, app, user, session string) error
	// Close releases the store's resources.
	Close() error
}

// Service manages artifacts over a Store. It is safe for concurrent use.
type Service struct{ store Store }

// NewService returns a service over store.
func NewService(store Store) *Service { return &Service{store: store} }

// Store returns the service's storage driver.
func (s *Service) Store() Store { return s.store }

// Close closes the store.
func (s *Service) Close() error { return s.store.Close() }

func (r Ref) key() (Key, error) {
	if strings.TrimSpace(r.AppName) == "" || strings.TrimSpace(r.UserID) == "" {
		return Key{}, fmt.Errorf("%w: app name and user id are required", ErrInvalid)
	}
	if err := checkIDs(r.AppName, r.UserID, r.SessionID); err != nil {
		return Key{}, err
	}
	if err := ValidateName(r.Name); err != nil {
		return Key{}, err
	}
	k := Key(r)
	if strings.HasPrefix(r.Name, PrefixUser) {
		k.SessionID = ""
	} else if strings.TrimSpace(r.SessionID) == "" {
		return Key{}, fmt.Errorf("%w: session id is required for %q", ErrInvalid, r.Name)
	}
	return k, nil
}

// checkIDs rejects ids that no store can keep and give back as they are:
// invalid UTF-8 or NUL.
func checkIDs(ids ...string) error {
	for _, id := range ids {
		if !utf8.ValidString(id) || strings.IndexByte(id, 0) >= 0 {
			return fmt.Errorf("%w: id %q is not valid UTF-8 without NUL", ErrInvalid, id)
		}
	}
	return nil
}

// ValidateName reports whether name is an acceptable artifact name: not
// empty, at most 512 bytes of valid UTF-8, no NUL, and not a path that could
// escape a directory ("..", absolute paths, backslashes). Every name a
// listing returns can therefore be loaded as it is.
func ValidateName(name string) error {
	bad := name == "" || len(name) > 512 || !utf8.ValidString(name) || strings.ContainsAny(name, "\x00\\") ||
		strings.HasPrefix(name, "/") || slices.Contains(strings.Split(name, "/"), "..") ||
		slices.Contains(strings.Split(name, "/"), ".")
	if bad {
		return fmt.Errorf("%w: bad artifact name %q", ErrInvalid, name)
	}
	return nil
}

// Save stores part as a new version of the artifact and returns the version.
func (s *Service) Save(ctx context.Context, ref Ref, part *genai.Part) (int64, error) {
	k, err := ref.key()
	if err != nil {
		return 0, err
	}
	if part == nil || (part.Text == "" && part.InlineData == nil && part.FileData == nil) {
		return 0, fmt.Errorf("%w: artifact %q has no data", ErrInvalid, ref.Name)
	}
	if err := checkPart(part); err != nil {
		return 0, fmt.Errorf("%w: artifact %q: %w", ErrInvalid, ref.Name, err)
	}
	v, err := s.store.Save(ctx, k, part)
	if err != nil {
		return 0, fmt.Errorf("artifact: save %s: %w", ref.Name, err)
	}
	return v, nil
}

// checkPart rejects text a store would not give back as it is: strings
// that are not valid UTF-8 (JSON and text encodings replace their bad
// bytes). Binary data goes in InlineData.
func checkPart(p *genai.Part) error {
	strs := []string{p.Text}
	if p.InlineData != nil {
		strs = append(strs, p.InlineData.MIMEType, p.InlineData.DisplayName)
	}
	if p.FileData != nil {
		strs = append(strs, p.FileData.FileURI, p.FileData.MIMEType, p.FileData.DisplayName)
	}
	for _, s := range strs {
		if !utf8.ValidString(s) {
			return fmt.Errorf("text %q is not valid UTF-8", s)
		}
	}
	return nil
}

// Load returns a version of an artifact (Latest for the newest).
func (s *Service) Load(ctx context.Context, ref Ref, version int64) (*genai.Part, error) {
	k, err := ref.key()
	if err != nil {
		return nil, err
	}
	p, err := s.store.Load(ctx, k, version)
	if err != nil {
		return nil, fmt.Errorf("artifact: load %s: %w", ref.Name, err)
	}
	return p, nil
}

// List returns the names of a session's artifacts and of the user's shared
// ("user:") artifacts, sorted.
func (s *Service) List(ctx context.Context, app, user, sessionID string) ([]string, error) {
	if strings.TrimSpace(app) == "" || strings.TrimSpace(user) == "" {
		return nil, fmt.Errorf("%w: app name and user id are required", ErrInvalid)
	}
	if err := checkIDs(app, user, sessionID); err != nil {
		return nil, err
	}
	var names []string
	if sessionID != "" {
		n, err := s.store.List(ctx, app, user, sessionID)
		if err != nil {
			return nil, fmt.Errorf("artifact: list: %w", err)
		}
		names = n
	}
	u, err := s.store.List(ctx, app, user, "")
	if err != nil {
		return nil, fmt.Errorf("artifact: list: %w", err)
	}
	names = append(names, u...)
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Versions returns the versions of an artifact in increasing order, or an
// error wrapping ErrNotFound if it has none.
func (s *Service) Versions(ctx context.Context, ref Ref) ([]int64, error) {
	k, err := ref.key()
	if err != nil {
		return nil, err
	}
	v, err := s.store.Versions(ctx, k)
	if err == nil && len(v) == 0 {
		err = ErrNotFound // one rule for every store: no versions, no artifact
	}
	if err != nil {
		return nil, fmt.Errorf("artifact: versions %s: %w", ref.Name, err)
	}
	return v, nil
}

// Delete removes every version of an artifact.
func (s *Service) Delete(ctx context.Context, ref Ref) error {
	k, err := ref.key()
	if err != nil {
		return err
	}
	if err := s.store.Delete(ctx, k); err != nil {
		return fmt.Errorf("artifact: delete %s: %w", ref.Name, err)
	}
	return nil
}

// DeleteVersion removes one version of an artifact. The other versions keep
// their numbers; removing the latest lets the next save reuse its number.
// Removing a missing version is not an error.
func (s *Service) DeleteVersion(ctx context.Context, ref Ref, version int64) error {
	k, err := ref.key()
	if err != nil {
		return err
	}
	if version < 0 {
		return fmt.Errorf("%w: version %d of %q", ErrInvalid, version, ref.Name)
	}
	if err := s.store.DeleteVersion(ctx, k, version); err != nil {
		return fmt.Errorf("artifact: delete %s version %d: %w", ref.Name, version, err)
	}
	return nil
}

// DeleteSession removes every artifact of one session, with all versions.
// The user's shared ("user:") artifacts belong to the user, not to the
// session, and are kept. A later session with the same id starts without
// artifacts.
func (s *Service) DeleteSession(ctx context.Context, app, user, sessionID string) error {
	if strings.TrimSpace(app) == "" || strings.TrimSpace(user) == "" || strings.TrimSpace(sessionID) == "" {
		return fmt.Errorf("%w: app name, user id and session id are required", ErrInvalid)
	}
	if err := s.store.DeleteSession(ctx, app, user, sessionID); err != nil {
		return fmt.Errorf("artifact: delete session %s: %w", sessionID, err)
	}
	return nil
}
