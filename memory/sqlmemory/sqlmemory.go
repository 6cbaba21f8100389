// Package sqlmemory is a durable memory store with full-text search, on
// SQLite (FTS5) or PostgreSQL (tsvector with a GIN index).
//
// Open takes the same URLs as session/sqlsession (sqlite:///path.db,
// sqlite::memory:, postgres://...); sessions and memories may share one
// database. The schema is created and upgraded when a store is opened.
//
// Words are those of [memory.Words] (runs of letters and digits,
// lower-cased), in entries and queries alike. A query is taken as a set of
// words, any of which may match: the words are extracted from the query and
// joined with OR, so the engines' query syntax is never interpreted.
// Entries that contain more of the query's words come first; among those,
// the engine's relevance ranking (BM25 in SQLite, ts_rank in PostgreSQL)
// decides, then time, newest first. The database ranks every matching
// entry of the user this way and returns only the requested number.
//
// Each entry's words are stored joined by spaces, and the engine indexes
// them rather than the text (FTS5 with its ascii tokenizer, PostgreSQL with
// a 'simple' tsvector), so its own word rules, such as FTS5's removal of
// diacritics or PostgreSQL's e-mail and URL tokens, never apply.
// PostgreSQL cannot index words longer than 2047 bytes; such words are left
// out of entries and queries there.
package sqlmemory

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/internal/sqldb"
	"github.com/loomkit/loom/memory"
)

//go:embed migrations
var migrations embed.FS

// Options configures a Store. The zero value is the default.
type Options struct {
	// MaxOpenConns bounds the number of connections used for reads. Zero
	// means a default suited to the database.
	MaxOpenConns int
}

// Store is a memory.Store on a SQL database. It is safe for concurrent use,
// also by several processes sharing the database.
type Store struct {
	db                                 *sqldb.DB
	lock, del, delEntry, insert, query *sql.Stmt
}

// Open opens (and creates or upgrades if needed) the memory store at dsn.
// opts may be nil.
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	s := &Store{}
	_, err := sqldb.OpenMigrated(ctx, dsn, &sqldb.Options{MaxOpenConns: opts.MaxOpenConns}, "memory", migrations, func(db *sqldb.DB) error {
		s.db = db
		if err := s.prepare(ctx); err != nil {
			return err
		}
		return s.fillTerms(ctx)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlmemory: %w", err)
	}
	return s, nil
}

// NewService opens the store at dsn and returns a memory service over it.
func NewService(ctx context.Context, dsn string, opts *Options) (*memory.Service, error) {
	s, err := Open(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	return memory.NewService(s), nil
}

func (s *Store) prepare(ctx context.Context) error {
	var err error
	p := func(pool *sql.DB, q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = s.db.Prepare(ctx, pool, q)
		return st
	}
	w, r := s.db.W, s.db.R
	s.insert = p(w, `INSERT INTO memories (app_name, user_id, session_id, id, author, event_time, content, body, terms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	s.del = p(w, `DELETE FROM memories WHERE app_name = ? AND user_id = ? AND session_id = ?`)
	s.delEntry = p(w, `DELETE FROM memories WHERE app_name = ? AND user_id = ? AND session_id = ? AND id = ?`)
	const cols = `m.id, m.session_id, m.author, m.event_time, m.content, m.body`
	switch s.db.Dialect {
	case sqldb.Postgres:
		// Replacing a session's memories, or some of them, is
		// delete-then-insert; two concurrent writes to one session must
		// not interleave, which READ COMMITTED alone would allow.
		// SQLite's immediate transactions already serialize writers.
		s.lock = p(w, `SELECT pg_advisory_xact_lock(hashtextextended(?, 0))`)
		// Parameters: the query's words joined by " | " (to_tsquery
		// syntax for any of them; words hold no operator characters),
		// then joined by spaces. An entry's score is the number of the
		// query's words its tsvector holds: those ts_delete removes.
		s.query = p(r, `SELECT `+cols+` FROM memories m, to_tsquery('simple', ?) q,
				tsvector_to_array(to_tsvector('simple', ?)) qw
			WHERE m.words @@ q AND m.app_name = ? AND m.user_id = ?
			ORDER BY length(m.words) - length(ts_delete(m.words, qw)) DESC,
				ts_rank(m.words, q) DESC, m.event_time DESC LIMIT ?`)
	}
	return err
}

// sqliteSearch is SQLite's search query for the words ws (see Search).
// Its parameters: the words as an FTS5 expression for any of them, app,
// user, and the limit. An entry's score, the number of the words its terms
// hold, is counted only for the user's entries that match, one instr a
// word. The words are written into the query as literals, in a balanced
// sum: a query of many words stays within SQLite's bounds on parameters
// and on the depth of an expression. Words are letters and digits
// (memory.Words), so a literal holds no quote.
func sqliteSearch(ws []string) string {
	var b strings.Builder
	b.WriteString(`SELECT m.id, m.session_id, m.author, m.event_time, m.content, m.body
		FROM memories_fts f JOIN memories m ON m.mid = f.rowid
		WHERE f.memories_fts MATCH ? AND m.app_name = ? AND m.user_id = ?
		ORDER BY `)
	var sum func(ws []string)
	sum = func(ws []string) {
		if len(ws) == 1 {
			b.WriteString(`(instr(' ' || m.terms || ' ', ' ` + strings.ReplaceAll(ws[0], "'", "''") + ` ') > 0)`)
			return
		}
		b.WriteString("(")
		sum(ws[:len(ws)/2])
		b.WriteString(" + ")
		sum(ws[len(ws)/2:])
		b.WriteString(")")
	}
	sum(ws)
	b.WriteString(` DESC, bm25(memories_fts), m.event_time DESC LIMIT ?`)
	return b.String()
}

// Close implements memory.Store.
func (s *Store) Close() error { return s.db.Close() }

// Replace implements memory.Store, in one transaction.
func (s *Store) Replace(ctx context.Context, app, user, sessionID string, entries []memory.Entry) error {
	return s.write(ctx, app, user, sessionID, entries, true)
}

// Upsert implements memory.Store, in one transaction.
func (s *Store) Upsert(ctx context.Context, app, user, sessionID string, entries []memory.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	return s.write(ctx, app, user, sessionID, entries, false)
}

// write stores entries in one transaction: after deleting all the
// session's memories when replace is set, else the memories of the
// entries' ids.
func (s *Store) write(ctx context.Context, app, user, sessionID string, entries []memory.Entry, replace bool) error {
	type row struct {
		content     []byte
		body, terms string
	}
	rows := make([]row, len(entries))
	for i := range entries {
		c, err := json.Marshal(entries[i].Content)
		if err != nil {
			return fmt.Errorf("%w: entry %s: %w", memory.ErrInvalid, entries[i].ID, err)
		}
		body := entries[i].Text()
		rows[i] = row{c, body, s.terms(body)}
	}
	tx, err := s.db.BeginWrite(ctx)
	if err != nil {
		return fmt.Errorf("sqlmemory: begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	if s.lock != nil {
		if _, err := tx.StmtContext(ctx, s.lock).ExecContext(ctx, fmt.Sprintf("%d:%s%d:%s%s", len(app), app, len(user), user, sessionID)); err != nil {
			return fmt.Errorf("sqlmemory: lock session: %w", err)
		}
	}
	if replace {
		if _, err := tx.StmtContext(ctx, s.del).ExecContext(ctx, app, user, sessionID); err != nil {
			return fmt.Errorf("sqlmemory: delete: %w", err)
		}
	} else {
		del := tx.StmtContext(ctx, s.delEntry)
		for _, e := range entries {
			if _, err := del.ExecContext(ctx, app, user, sessionID, e.ID); err != nil {
				return fmt.Errorf("sqlmemory: delete entry: %w", err)
			}
		}
	}
	ins := tx.StmtContext(ctx, s.insert)
	for i, e := range entries {
		var ts int64
		if !e.Timestamp.IsZero() {
			ts = e.Timestamp.UnixNano()
		}
		if _, err := ins.ExecContext(ctx, app, user, sessionID, e.ID, e.Author, ts, rows[i].content, rows[i].body, rows[i].terms); err != nil {
			return fmt.Errorf("sqlmemory: insert: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlmemory: commit: %w", err)
	}
	return nil
}

// maxPostgresWord is the length in bytes of the longest word a PostgreSQL
// tsvector or tsquery holds.
const maxPostgresWord = 2047

// indexable reports whether the database can index w.
func (s *Store) indexable(w string) bool {
	return s.db.Dialect != sqldb.Postgres || len(w) <= maxPostgresWord
}

// terms returns the words of body the database indexes, in order, joined
// by spaces.
func (s *Store) terms(body string) string {
	ws := memory.Words(body)
	return strings.Join(slices.DeleteFunc(ws, func(w string) bool { return !s.indexable(w) }), " ")
}

// words returns the distinct words of text, sorted. Everything that is not
// a letter or digit, including every operator of the engines' query
// languages, separates words.
func words(text string) []string {
	ws := memory.Words(text)
	slices.Sort(ws)
	return slices.Compact(ws)
}

// fillBatch is the number of rows fillTerms updates in one transaction.
const fillBatch = 500

// fillTerms sets the terms of the rows that have none: rows written before
// the schema had terms, or by an older version of this package sharing the
// database. It runs when the store is opened, and costs one indexed lookup
// when there is nothing to do.
func (s *Store) fillTerms(ctx context.Context) error {
	type row struct {
		mid  int64
		body string
	}
	for {
		rs, err := s.db.R.QueryContext(ctx, s.db.Rebind(`SELECT mid, body FROM memories WHERE terms IS NULL ORDER BY mid LIMIT ?`), fillBatch)
		if err != nil {
			return fmt.Errorf("fill terms: %w", err)
		}
		var batch []row
		for rs.Next() {
			var r row
			if err := rs.Scan(&r.mid, &r.body); err != nil {
				rs.Close()
				return fmt.Errorf("fill terms: %w", err)
			}
			batch = append(batch, r)
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return fmt.Errorf("fill terms: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		tx, err := s.db.BeginWrite(ctx)
		if err != nil {
			return fmt.Errorf("fill terms: %w", err)
		}
		for _, r := range batch {
			// Another process may have filled the row in meanwhile.
			if _, err := tx.ExecContext(ctx, s.db.Rebind(`UPDATE memories SET terms = ? WHERE mid = ? AND terms IS NULL`), s.terms(r.body), r.mid); err != nil {
				tx.Rollback() //nolint:errcheck // the update's error is the one to report
				return fmt.Errorf("fill terms: %w", err)
			}
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("fill terms: %w", err)
		}
	}
}

// Search implements memory.Store. The database orders the matching
// entries by the number of the query's words they contain, then by its
// relevance ranking, then newest first, and returns the first limit.
func (s *Store) Search(ctx context.Context, app, user, query string, limit int) ([]memory.Entry, error) {
	ws := slices.DeleteFunc(words(query), func(w string) bool { return !s.indexable(w) })
	if len(ws) == 0 || limit <= 0 {
		return nil, nil
	}
	var rows *sql.Rows
	var err error
	if s.db.Dialect == sqldb.Postgres {
		rows, err = s.query.QueryContext(ctx, strings.Join(ws, " | "), strings.Join(ws, " "), app, user, limit)
	} else {
		// Each word quoted as an FTS5 string, joined with OR.
		rows, err = s.db.R.QueryContext(ctx, sqliteSearch(ws), `"`+strings.Join(ws, `" OR "`)+`"`, app, user, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlmemory: search: %w", err)
	}
	defer rows.Close()
	var out []memory.Entry
	for rows.Next() {
		var (
			e       memory.Entry
			ts      int64
			content []byte
			body    string
		)
		if err := rows.Scan(&e.ID, &e.SessionID, &e.Author, &ts, &content, &body); err != nil {
			return nil, fmt.Errorf("sqlmemory: search: %w", err)
		}
		if !slices.ContainsFunc(memory.Words(body), func(w string) bool {
			_, ok := slices.BinarySearch(ws, w)
			return ok
		}) {
			// Matched by the engine's word rule only: a row indexed by
			// its body until Open fills its terms in.
			continue
		}
		if ts != 0 {
			e.Timestamp = time.Unix(0, ts)
		}
		e.Content = new(genai.Content)
		if err := json.Unmarshal(content, e.Content); err != nil {
			return nil, fmt.Errorf("sqlmemory: decode entry %s: %w", e.ID, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlmemory: search: %w", err)
	}
	return out, nil
}
