// Package sqleval keeps eval results in a table of a SQL database, SQLite
// or PostgreSQL: an [eval.ResultStore] for deployments whose sessions live
// in a database, so that their eval history lives beside them.
//
// Open takes the URLs of session/sqlsession (sqlite:///path.db,
// sqlite::memory:, postgres://...); sessions, memories and eval results
// may share one database. The table is created when a store is opened.
// Results are their own rows, apart from sessions: no user's session list
// ever holds one.
package sqleval

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"

	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/internal/sqldb"
)

//go:embed migrations
var migrations embed.FS

// Results is an [eval.ResultStore] on a SQL database. It is safe for
// concurrent use, also by several processes sharing the database.
type Results struct {
	db *sqldb.DB
}

// Open opens (and creates if needed) the result store at dsn.
func Open(ctx context.Context, dsn string) (*Results, error) {
	r := &Results{}
	_, err := sqldb.OpenMigrated(ctx, dsn, nil, "eval", migrations, func(db *sqldb.DB) error {
		r.db = db
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqleval: %w", err)
	}
	return r, nil
}

// Close closes the database.
func (r *Results) Close() error { return r.db.Close() }

// ListResults implements eval.ResultStore.
func (r *Results) ListResults(ctx context.Context, app string) ([]string, error) {
	if err := eval.CheckResultKey(app, "_"); err != nil {
		return nil, err
	}
	rows, err := r.db.R.QueryContext(ctx, r.db.Rebind(`SELECT id FROM eval_results WHERE app_name = ? ORDER BY id`), app)
	if err != nil {
		return nil, fmt.Errorf("sqleval: list results: %w", err)
	}
	defer rows.Close()
	ids := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("sqleval: list results: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqleval: list results: %w", err)
	}
	return ids, nil
}

// GetResult implements eval.ResultStore.
func (r *Results) GetResult(ctx context.Context, app, id string) (*eval.SetResult, error) {
	if err := eval.CheckResultKey(app, id); err != nil {
		return nil, err
	}
	var data string
	err := r.db.R.QueryRowContext(ctx, r.db.Rebind(`SELECT data FROM eval_results WHERE app_name = ? AND id = ?`), app, id).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("eval result %q: %w", id, eval.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqleval: get result %q: %w", id, err)
	}
	res, err := eval.ParseResult([]byte(data))
	if err != nil {
		return nil, fmt.Errorf("eval result %q: %w", id, err)
	}
	return res, nil
}

// SaveResult implements eval.ResultStore.
func (r *Results) SaveResult(ctx context.Context, app string, res *eval.SetResult) error {
	if err := eval.CheckResultKey(app, res.EvalSetResultID); err != nil {
		return err
	}
	data, err := res.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = r.db.W.ExecContext(ctx, r.db.Rebind(`INSERT INTO eval_results (app_name, id, data) VALUES (?, ?, ?)
		ON CONFLICT (app_name, id) DO UPDATE SET data = excluded.data`), app, res.EvalSetResultID, string(data))
	if err != nil {
		return fmt.Errorf("sqleval: save result %q: %w", res.EvalSetResultID, err)
	}
	return nil
}
