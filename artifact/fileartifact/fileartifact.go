// Package fileartifact is an artifact store that keeps versions as files in
// a local directory.
//
// # Layout
//
//	<dir>/<app>/<user>/user/<name>/<version>               user-scoped ("user:") artifacts
//	<dir>/<app>/<user>/session/<session>/<name>/<version>  session artifacts
//
// Every id and name is one path segment, escaped so that no input can leave
// the directory or collide with another: lower-case ASCII letters, digits,
// '-', '_' and '.' (not leading) are kept and every other byte becomes %XX,
// so "Report.pdf" is stored as "%52eport.pdf" and "a/b" as "a%2Fb". Names
// whose escape would exceed 200 bytes are stored under "~" and a SHA-256 of
// the name. Versions are decimal file names: 0, 1, 2, ...
//
// Each version file holds the whole part: one line of JSON (the artifact
// name and the genai.Part without its inline bytes, which carries the mime
// type), a newline, then the raw inline bytes. A version file is never
// modified after it is published.
//
// # Atomicity and concurrency
//
// A save writes the version to a temporary file in the artifact's directory,
// syncs it, and publishes it with a hard link to the next free version
// number, which fails if that number is taken; the save then tries the next
// number. No save can overwrite another, readers never see a partial file,
// and versions stay consecutive, across goroutines and across processes
// sharing the directory. The directory must therefore be on a file system
// with hard links (any common local file system). Delete renames the
// artifact's directory (DeleteSession the session's) out of the way before
// removing it, so readers see either every version or none. Temporary files
// and directories start with a dot; ones left behind by a crash are ignored
// by readers.
package fileartifact

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"google.golang.org/genai"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/internal/codec"
)

// Store is an artifact.Store over a local directory. It is safe for
// concurrent use, also by several processes sharing the directory.
type Store struct {
	dir    string
	closed atomic.Bool
}

// Open returns a store over dir, creating the directory if needed.
func Open(dir string) (*Store, error) {
	if dir == "" {
		return nil, fmt.Errorf("fileartifact: %w: empty directory", artifact.ErrInvalid)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("fileartifact: open %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("fileartifact: open %s: %w", dir, err)
	}
	return &Store{dir: abs}, nil
}

// Dir returns the store's root directory.
func (s *Store) Dir() string { return s.dir }

var errClosed = errors.New("fileartifact: store is closed")

func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed
	}
	return ctx.Err()
}

// scopeDir returns the directory holding the artifacts of (app, user,
// session); session "" is the user scope.
func (s *Store) scopeDir(app, user, session string) (string, error) {
	if app == "" || user == "" {
		return "", fmt.Errorf("%w: app name and user id are required", artifact.ErrInvalid)
	}
	base := filepath.Join(s.dir, codec.Escape(app), codec.Escape(user))
	if session == "" {
		return filepath.Join(base, "user"), nil
	}
	return filepath.Join(base, "session", codec.Escape(session)), nil
}

func (s *Store) artifactDir(ctx context.Context, key artifact.Key) (string, error) {
	if err := s.check(ctx); err != nil {
		return "", err
	}
	if err := artifact.ValidateName(key.Name); err != nil {
		return "", err
	}
	d, err := s.scopeDir(key.AppName, key.UserID, key.SessionID)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, codec.Escape(key.Name)), nil
}

// versions returns the published versions in dir, in increasing order.
func versions(dir string) ([]int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var vs []int64
	for _, e := range entries {
		if v, ok := codec.ParseVersion(e.Name()); ok {
			vs = append(vs, v)
		}
	}
	slices.Sort(vs)
	return vs, nil
}

// maxSaveAttempts bounds how often a save starts over because a concurrent
// Delete removed the directory it was writing into.
const maxSaveAttempts = 5

// Save implements artifact.Store.
func (s *Store) Save(ctx context.Context, key artifact.Key, part *genai.Part) (int64, error) {
	dir, err := s.artifactDir(ctx, key)
	if err != nil {
		return 0, err
	}
	data, err := codec.Encode(key.Name, part)
	if err != nil {
		return 0, err
	}
	for attempt := 1; ; attempt++ {
		v, err := s.save(ctx, dir, data)
		if err == nil || !errors.Is(err, fs.ErrNotExist) || attempt == maxSaveAttempts {
			return v, err
		}
	}
}

func (s *Store) save(ctx context.Context, dir string, data []byte) (int64, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	tmp, err := writeTemp(dir, data)
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp)
	vs, err := versions(dir)
	if err != nil {
		return 0, err
	}
	v := int64(0)
	if len(vs) > 0 {
		v = vs[len(vs)-1] + 1
	}
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		err := os.Link(tmp, filepath.Join(dir, strconv.FormatInt(v, 10)))
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return 0, err
		}
		v++ // taken by a concurrent save: the next number is free or about to be tried
	}
	// The version is published; a sync failing because a concurrent Delete
	// moved the directory away must not make the caller save it again.
	if err := syncDir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	return v, nil
}

// writeTemp writes data to a new synced temporary file in dir and returns
// its path.
func writeTemp(dir string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// syncDir makes a new directory entry durable. Windows cannot sync
// directories, and makes entries durable on its own.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Load implements artifact.Store.
func (s *Store) Load(ctx context.Context, key artifact.Key, version int64) (*genai.Part, error) {
	dir, err := s.artifactDir(ctx, key)
	if err != nil {
		return nil, err
	}
	if version == artifact.Latest {
		vs, err := versions(dir)
		if err != nil {
			return nil, err
		}
		if len(vs) == 0 {
			return nil, artifact.ErrNotFound
		}
		version = vs[len(vs)-1]
	}
	if version < 0 {
		return nil, fmt.Errorf("version %d: %w", version, artifact.ErrNotFound)
	}
	b, err := os.ReadFile(filepath.Join(dir, strconv.FormatInt(version, 10)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("version %d: %w", version, artifact.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	_, p, err := codec.Decode(b)
	return p, err
}

// List implements artifact.Store.
func (s *Store) List(ctx context.Context, app, user, session string) ([]string, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	dir, err := s.scopeDir(app, user, session)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		adir := filepath.Join(dir, e.Name())
		vs, err := versions(adir)
		if err != nil {
			return nil, err
		}
		if len(vs) == 0 {
			continue // being created or deleted
		}
		name, err := codec.Unescape(e.Name())
		if codec.Hashed(e.Name()) {
			name, err = readName(filepath.Join(adir, strconv.FormatInt(vs[0], 10)))
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted meanwhile
			}
		}
		if err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// readName returns the artifact name from the header of a version file.
func readName(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	// The header holds at most a 512-byte name (escaped for JSON) and the
	// part's small fields; 64 KiB is ample.
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return "", err
	}
	return codec.DecodeName(b)
}

// Versions implements artifact.Store.
func (s *Store) Versions(ctx context.Context, key artifact.Key) ([]int64, error) {
	dir, err := s.artifactDir(ctx, key)
	if err != nil {
		return nil, err
	}
	return versions(dir)
}

// Delete implements artifact.Store.
func (s *Store) Delete(ctx context.Context, key artifact.Key) error {
	dir, err := s.artifactDir(ctx, key)
	if err != nil {
		return err
	}
	// Move the whole artifact aside in one step, then remove it at leisure.
	trash, err := os.MkdirTemp(filepath.Dir(dir), ".del-*")
	if errors.Is(err, fs.ErrNotExist) {
		return nil // the scope directory does not exist, so neither does the artifact
	}
	if err != nil {
		return err
	}
	defer os.RemoveAll(trash)
	if err := os.Rename(dir, filepath.Join(trash, "a")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// DeleteVersion implements artifact.Store. Removing the file of the latest
// version frees its number for the next save, as a save takes the number
// after the highest published one.
func (s *Store) DeleteVersion(ctx context.Context, key artifact.Key, version int64) error {
	dir, err := s.artifactDir(ctx, key)
	if err != nil {
		return err
	}
	if version < 0 {
		return nil
	}
	if err := os.Remove(filepath.Join(dir, strconv.FormatInt(version, 10))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// Drop the artifact's directory if that was its last version. This
	// fails, harmlessly, while a concurrent save has its temporary file in
	// it; a save whose directory is removed before it writes starts over.
	if vs, err := versions(dir); err == nil && len(vs) == 0 {
		_ = os.Remove(dir)
	}
	return nil
}

// DeleteSession implements artifact.Store. Like Delete, it renames the
// session's directory out of the way in one step, so readers see all of
// its artifacts or none, then removes it.
func (s *Store) DeleteSession(ctx context.Context, app, user, session string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	dir, err := s.scopeDir(app, user, session)
	if err != nil {
		return err
	}
	trash, err := os.MkdirTemp(filepath.Dir(dir), ".del-*")
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no session of this user has artifacts
	}
	if err != nil {
		return err
	}
	defer os.RemoveAll(trash)
	if err := os.Rename(dir, filepath.Join(trash, "s")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Close implements artifact.Store. Later calls fail; the files stay.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}
