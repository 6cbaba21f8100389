// Package blobartifact is an artifact store on a gocloud.dev/blob bucket:
// Amazon S3, Google Cloud Storage, Azure Blob Storage, a local directory or
// memory, chosen by URL.
//
// # Buckets and drivers
//
// [Open] takes a bucket URL such as "s3://my-bucket?region=us-east-1",
// "gs://my-bucket", "azblob://my-container", "file:///var/lib/loom" or
// "mem://". This package links the file:// and mem:// drivers. To keep the
// cloud SDKs out of programs that do not need them, the cloud drivers are
// not linked here: import the one you use for its side effect,
//
//	import _ "gocloud.dev/blob/s3blob"    // s3://
//	import _ "gocloud.dev/blob/gcsblob"   // gs://
//	import _ "gocloud.dev/blob/azureblob" // azblob://
//
// A "prefix" URL parameter (for example "s3://bucket?prefix=loom/") keeps
// the store's objects under a prefix. [New] wraps a bucket you have opened
// yourself.
//
// # Layout
//
//	<app>/<user>/user/<name>/<version>               user-scoped ("user:") artifacts
//	<app>/<user>/session/<session>/<name>/<version>  session artifacts
//
// Ids and names are escaped into single key segments as in fileartifact
// (lower-case ASCII letters, digits, '-', '_' and non-leading '.' are kept,
// every other byte becomes %XX; very long names become "~" and a SHA-256).
// An object holds one whole version: a line of JSON with the artifact name
// and the genai.Part without its inline bytes (which carries the mime type),
// a newline, then the raw inline bytes.
//
// # Concurrency
//
// A save writes the next version number with the bucket's create-only
// precondition (WriterOptions.IfNotExist) and, if another writer took that
// number first, tries the next one, so concurrent saves, also from several
// processes or servers, never overwrite each other and versions stay
// consecutive. This relies on the service honouring the precondition
// atomically, as S3, GCS, Azure and mem:// do. The file:// driver checks it
// only within one Store, so processes sharing a directory should use
// fileartifact instead. Delete removes versions oldest first, so a
// concurrent Load of the latest version sees it until the delete is done.
package blobartifact

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file:// buckets
	_ "gocloud.dev/blob/memblob"  // mem:// buckets
	"gocloud.dev/gcerrors"
	"google.golang.org/genai"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/internal/codec"
)

// Store is an artifact.Store over a blob bucket. It is safe for concurrent
// use, also by several processes sharing the bucket (see the package doc).
type Store struct {
	bucket    *blob.Bucket
	ownBucket bool
	closed    atomic.Bool
	// locks serialize saves of one artifact within this process, so that
	// they do not race for the same version number; the bucket's
	// precondition protects against other processes.
	locks [64]sync.Mutex
}

// Open opens the bucket at bucketURL (see the package doc) and returns a
// store over it. Close closes the bucket.
func Open(ctx context.Context, bucketURL string) (*Store, error) {
	b, err := blob.OpenBucket(ctx, bucketURL)
	if err != nil {
		return nil, fmt.Errorf("blobartifact: open %s: %w", bucketURL, err)
	}
	return &Store{bucket: b, ownBucket: true}, nil
}

// New returns a store over an open bucket. The caller keeps ownership:
// Close does not close the bucket.
func New(bucket *blob.Bucket) *Store { return &Store{bucket: bucket} }

var errClosed = errors.New("blobartifact: store is closed")

func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed
	}
	return ctx.Err()
}

// scopePrefix returns the key prefix, ending in "/", of the artifacts of
// (app, user, session); session "" is the user scope.
func scopePrefix(app, user, session string) (string, error) {
	if app == "" || user == "" {
		return "", fmt.Errorf("%w: app name and user id are required", artifact.ErrInvalid)
	}
	p := codec.Escape(app) + "/" + codec.Escape(user) + "/"
	if session == "" {
		return p + "user/", nil
	}
	return p + "session/" + codec.Escape(session) + "/", nil
}

// artifactPrefix returns the key prefix, ending in "/", of key's versions.
func (s *Store) artifactPrefix(ctx context.Context, key artifact.Key) (string, error) {
	if err := s.check(ctx); err != nil {
		return "", err
	}
	if err := artifact.ValidateName(key.Name); err != nil {
		return "", err
	}
	p, err := scopePrefix(key.AppName, key.UserID, key.SessionID)
	if err != nil {
		return "", err
	}
	return p + codec.Escape(key.Name) + "/", nil
}

// versions returns the versions stored under prefix, in increasing order.
func (s *Store) versions(ctx context.Context, prefix string) ([]int64, error) {
	var vs []int64
	it := s.bucket.List(&blob.ListOptions{Prefix: prefix, Delimiter: "/"})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if v, ok := codec.ParseVersion(strings.TrimPrefix(obj.Key, prefix)); ok && !obj.IsDir {
			vs = append(vs, v)
		}
	}
	slices.Sort(vs)
	return vs, nil
}

func versionKey(prefix string, v int64) string { return prefix + strconv.FormatInt(v, 10) }

func (s *Store) lock(prefix string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(prefix))
	return &s.locks[h.Sum32()%uint32(len(s.locks))]
}

// Save implements artifact.Store.
func (s *Store) Save(ctx context.Context, key artifact.Key, part *genai.Part) (int64, error) {
	prefix, err := s.artifactPrefix(ctx, key)
	if err != nil {
		return 0, err
	}
	data, err := codec.Encode(key.Name, part)
	if err != nil {
		return 0, err
	}
	mu := s.lock(prefix)
	mu.Lock()
	defer mu.Unlock()
	vs, err := s.versions(ctx, prefix)
	if err != nil {
		return 0, err
	}
	v := int64(0)
	if len(vs) > 0 {
		v = vs[len(vs)-1] + 1
	}
	opts := &blob.WriterOptions{IfNotExist: true, ContentType: "application/octet-stream"}
	for {
		err := s.bucket.WriteAll(ctx, versionKey(prefix, v), data, opts)
		if err == nil {
			return v, nil
		}
		if gcerrors.Code(err) != gcerrors.FailedPrecondition {
			return 0, err
		}
		v++ // taken by another writer: try the next number
	}
}

// Load implements artifact.Store.
func (s *Store) Load(ctx context.Context, key artifact.Key, version int64) (*genai.Part, error) {
	prefix, err := s.artifactPrefix(ctx, key)
	if err != nil {
		return nil, err
	}
	if version == artifact.Latest {
		vs, err := s.versions(ctx, prefix)
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
	b, err := s.bucket.ReadAll(ctx, versionKey(prefix, version))
	if gcerrors.Code(err) == gcerrors.NotFound {
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
	prefix, err := scopePrefix(app, user, session)
	if err != nil {
		return nil, err
	}
	var names []string
	it := s.bucket.List(&blob.ListOptions{Prefix: prefix, Delimiter: "/"})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if !obj.IsDir {
			continue
		}
		seg := strings.TrimSuffix(strings.TrimPrefix(obj.Key, prefix), "/")
		if !codec.Hashed(seg) {
			name, err := codec.Unescape(seg)
			if err != nil {
				return nil, err
			}
			names = append(names, name)
			continue
		}
		name, ok, err := s.readName(ctx, obj.Key)
		if err != nil {
			return nil, err
		}
		if ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// readName returns the artifact name from the header of the first version
// under prefix; ok is false if the artifact was deleted meanwhile.
func (s *Store) readName(ctx context.Context, prefix string) (name string, ok bool, err error) {
	vs, err := s.versions(ctx, prefix)
	if err != nil || len(vs) == 0 {
		return "", false, err
	}
	// The header holds at most a 512-byte name (escaped for JSON) and the
	// part's small fields; 64 KiB is ample.
	r, err := s.bucket.NewRangeReader(ctx, versionKey(prefix, vs[0]), 0, 64<<10, nil)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return "", false, err
	}
	name, err = codec.DecodeName(b)
	return name, err == nil, err
}

// Versions implements artifact.Store.
func (s *Store) Versions(ctx context.Context, key artifact.Key) ([]int64, error) {
	prefix, err := s.artifactPrefix(ctx, key)
	if err != nil {
		return nil, err
	}
	return s.versions(ctx, prefix)
}

// Delete implements artifact.Store.
func (s *Store) Delete(ctx context.Context, key artifact.Key) error {
	prefix, err := s.artifactPrefix(ctx, key)
	if err != nil {
		return err
	}
	vs, err := s.versions(ctx, prefix)
	if err != nil {
		return err
	}
	for _, v := range vs {
		if err := s.bucket.Delete(ctx, versionKey(prefix, v)); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return err
		}
	}
	return nil
}

// DeleteVersion implements artifact.Store. The next save takes the number
// after the highest remaining version, so removing the latest frees its
// number.
func (s *Store) DeleteVersion(ctx context.Context, key artifact.Key, version int64) error {
	prefix, err := s.artifactPrefix(ctx, key)
	if err != nil {
		return err
	}
	if version < 0 {
		return nil
	}
	if err := s.bucket.Delete(ctx, versionKey(prefix, version)); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return err
	}
	return nil
}

// DeleteSession implements artifact.Store. It removes the session's objects
// one by one, so a concurrent reader may see some artifacts already gone.
func (s *Store) DeleteSession(ctx context.Context, app, user, session string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	prefix, err := scopePrefix(app, user, session)
	if err != nil {
		return err
	}
	var keys []string // listed in full first: deleting while paging could skip objects
	it := s.bucket.List(&blob.ListOptions{Prefix: prefix})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		keys = append(keys, obj.Key)
	}
	for _, k := range keys {
		if err := s.bucket.Delete(ctx, k); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return err
		}
	}
	return nil
}

// Close implements artifact.Store. It closes the bucket if the store opened
// it. Later calls fail.
func (s *Store) Close() error {
	if s.closed.Swap(true) || !s.ownBucket {
		return nil
	}
	if err := s.bucket.Close(); err != nil {
		return fmt.Errorf("blobartifact: close: %w", err)
	}
	return nil
}
