// Package sqlcredential is a credential.Store on SQLite or PostgreSQL.
//
// Open takes the same URLs as session/sqlsession (sqlite:///path.db,
// sqlite::memory:, postgres://...), so credentials may live in the session
// database, in a table of their own. The table holds only the records
// credential.Service has sealed: nothing in it is readable without the
// service's key.
package sqlcredential

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"

	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/internal/sqldb"
)

//go:embed migrations
var migrations embed.FS

// Store is a credential.Store on a SQL database. It is safe for concurrent
// use, also by several processes sharing the database.
type Store struct {
	db            *sqldb.DB
	get, put, del *sql.Stmt
}

// Open opens (and creates or upgrades if needed) the store at dsn.
func Open(ctx context.Context, dsn string) (*Store, error) {
	s := &Store{}
	_, err := sqldb.OpenMigrated(ctx, dsn, nil, "credentials", migrations, func(db *sqldb.DB) error {
		s.db = db
		var err error
		p := func(pool *sql.DB, q string) *sql.Stmt {
			if err != nil {
				return nil
			}
			var st *sql.Stmt
			st, err = db.Prepare(ctx, pool, q)
			return st
		}
		s.get = p(db.R, `SELECT record FROM credentials WHERE app_name = ? AND user_id = ? AND name = ?`)
		s.put = p(db.W, `INSERT INTO credentials (app_name, user_id, name, record) VALUES (?, ?, ?, ?)
			ON CONFLICT (app_name, user_id, name) DO UPDATE SET record = excluded.record`)
		s.del = p(db.W, `DELETE FROM credentials WHERE app_name = ? AND user_id = ? AND name = ?`)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlcredential: %w", err)
	}
	return s, nil
}

// NewService opens the store at dsn and returns a credential service over
// it that encrypts with key (see credential.NewService).
func NewService(ctx context.Context, dsn string, key []byte) (*credential.Service, error) {
	if len(key) != credential.KeySize {
		return nil, fmt.Errorf("%w: it has %d bytes, not %d", credential.ErrInvalidKey, len(key), credential.KeySize)
	}
	s, err := Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	svc, err := credential.NewService(s, key)
	if err != nil {
		s.Close()
		return nil, err
	}
	return svc, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Get returns the record under k.
func (s *Store) Get(ctx context.Context, k credential.Key) ([]byte, error) {
	var rec []byte
	err := s.get.QueryRowContext(ctx, k.AppName, k.UserID, k.Name).Scan(&rec)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %q of user %q", credential.ErrNotFound, k.Name, k.UserID)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlcredential: %w", err)
	}
	return rec, nil
}

// Put stores rec under k.
func (s *Store) Put(ctx context.Context, k credential.Key, rec []byte) error {
	if _, err := s.put.ExecContext(ctx, k.AppName, k.UserID, k.Name, rec); err != nil {
		return fmt.Errorf("sqlcredential: %w", err)
	}
	return nil
}

// Delete removes the record under k.
func (s *Store) Delete(ctx context.Context, k credential.Key) error {
	if _, err := s.del.ExecContext(ctx, k.AppName, k.UserID, k.Name); err != nil {
		return fmt.Errorf("sqlcredential: %w", err)
	}
	return nil
}
