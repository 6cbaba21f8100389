// Package sqldb opens the SQL databases behind Loom's durable stores and
// applies their schema migrations. It keeps the differences between SQLite
// and PostgreSQL in one place: how a URL becomes a driver and its settings,
// placeholder syntax, how writers are serialized and how migrations are
// locked. Queries are written once, with ? placeholders and the ON CONFLICT
// upsert syntax both databases share.
package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	_ "modernc.org/sqlite"             // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"
)

// Dialect names a SQL database family.
type Dialect string

// Supported dialects.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// ErrUnsupportedURL reports a database URL whose scheme is not supported.
var ErrUnsupportedURL = errors.New("unsupported database url")

// DB is an open database: a pool for writes and one for reads.
//
// SQLite allows one writer at a time per file. Writes go through a pool of a
// single connection so that writers in one process queue in Go instead of
// sleeping in SQLite's busy handler; writers in other processes wait on the
// busy timeout. Write transactions begin IMMEDIATE so that they take the
// write lock up front and never fail half-way with SQLITE_BUSY on upgrade.
// Reads use their own pool and, thanks to WAL, never block the writer.
// PostgreSQL uses one pool for both.
type DB struct {
	Dialect Dialect
	// W runs write transactions; R runs reads. They may be the same pool.
	W, R *sql.DB

	// The background checkpointer of a SQLite file.
	stop, done chan struct{}
	closeOnce  sync.Once
}

// Options tunes Open. The zero value is the default.
type Options struct {
	// MaxOpenConns bounds the read pool (default 4 for SQLite, 16 for
	// PostgreSQL, which also writes through it).
	MaxOpenConns int
}

// Open opens the database a URL names:
//
//	sqlite:///abs/path.db    a file (absolute path)
//	sqlite://rel/path.db     a file (relative path)
//	sqlite:rel.db            a file (relative path)
//	sqlite::memory:          a private in-memory database
//	postgres://... postgresql://...   a PostgreSQL server (pgx connection string)
//
// A query string on a SQLite URL is passed to the driver after Loom's own
// settings (WAL journal, synchronous=NORMAL, busy timeout, foreign keys).
func Open(ctx context.Context, dsn string, opts *Options) (*DB, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, fmt.Errorf("sqldb: open postgres: %w", err)
		}
		db.SetMaxOpenConns(cmpOr(o.MaxOpenConns, 16))
		db.SetMaxIdleConns(cmpOr(o.MaxOpenConns, 16))
		if err := db.PingContext(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("sqldb: connect to postgres: %w", err)
		}
		return &DB{Dialect: Postgres, W: db, R: db}, nil
	case strings.HasPrefix(dsn, "sqlite:"):
		return openSQLite(ctx, strings.TrimPrefix(dsn, "sqlite:"), o)
	}
	scheme, _, _ := strings.Cut(dsn, ":")
	return nil, fmt.Errorf("sqldb: %w: scheme %q", ErrUnsupportedURL, scheme)
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func openSQLite(ctx context.Context, rest string, o Options) (*DB, error) {
	rest = strings.TrimPrefix(rest, "//")
	file, query, _ := strings.Cut(rest, "?")
	// synchronous=NORMAL in WAL mode keeps the database consistent after a
	// crash of the process or the machine; a machine crash may lose the
	// last transactions, a process crash loses nothing that was committed.
	settings := "_busy_timeout=" + strconv.FormatInt(busyTimeout.Milliseconds(), 10) +
		"&_foreign_keys=1&_synchronous=NORMAL&_txlock=immediate"
	memory := file == "" || file == ":memory:"
	if !memory {
		settings = "_journal_mode=WAL&" + settings
	}
	if query != "" {
		settings += "&" + query
	}
	if memory {
		// Every connection to ":memory:" is a new database: keep exactly
		// one, forever, and use it for reads and writes.
		db, err := sql.Open("sqlite", ":memory:?"+settings)
		if err != nil {
			return nil, fmt.Errorf("sqldb: open sqlite: %w", err)
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
		if err := db.PingContext(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("sqldb: open sqlite: %w", err)
		}
		return &DB{Dialect: SQLite, W: db, R: db}, nil
	}
	// Checkpoints (copying the WAL back into the database file, with an
	// fsync) run in the background, off the path of commits; SQLite's own
	// automatic checkpoint stays as a backstop at a large WAL size.
	settings += "&_pragma=wal_autocheckpoint(16384)"
	w, err := sql.Open("sqlite", file+"?"+settings)
	if err != nil {
		return nil, fmt.Errorf("sqldb: open sqlite %s: %w", file, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	if err := openWAL(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqldb: open sqlite %s: %w", file, err)
	}
	r, err := sql.Open("sqlite", file+"?"+settings)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqldb: open sqlite %s: %w", file, err)
	}
	n := cmpOr(o.MaxOpenConns, 4)
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	db := &DB{Dialect: SQLite, W: w, R: r, stop: make(chan struct{}), done: make(chan struct{})}
	go db.checkpointer()
	return db, nil
}

// busyTimeout is how long a SQLite connection waits for a lock that
// another connection holds (its busy_timeout).
const busyTimeout = 10 * time.Second

// openWAL opens the first connection of a SQLite file, which puts the
// file in WAL mode (the journal mode its connections ask for), and checks
// that it is. The file keeps the mode for every connection from then on.
// Switching a file to WAL upgrades the read lock of the statement to the
// write lock, and SQLite refuses such an upgrade at once, without waiting
// out the busy timeout, while another connection holds the file: another
// process opening the same new file at the same moment. So a refused
// connection is tried again until the busy timeout has passed.
func openWAL(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(busyTimeout)
	wait := time.Millisecond
	for {
		err := db.PingContext(ctx)
		if err == nil {
			break
		}
		if !isBusy(err) || time.Now().Add(wait).After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("the file stays in journal mode %q: WAL is required", mode)
	}
	return nil
}

// isBusy reports whether err is SQLite's SQLITE_BUSY, or one of its
// extended codes.
func isBusy(err error) bool {
	var e interface{ Code() int }
	return errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_BUSY
}

// checkpointInterval is how often the background checkpointer runs.
const checkpointInterval = 200 * time.Millisecond

// checkpointer copies committed WAL content into the database file
// periodically. A PASSIVE checkpoint never blocks writers or readers.
func (db *DB) checkpointer() {
	defer close(db.done)
	t := time.NewTicker(checkpointInterval)
	defer t.Stop()
	for {
		select {
		case <-db.stop:
			return
		case <-t.C:
			// Errors (such as SQLITE_BUSY while another process
			// checkpoints) only mean this round is skipped.
			db.R.Exec("PRAGMA wal_checkpoint(PASSIVE)") //nolint:errcheck // best effort
		}
	}
}

// FreshBlobs reports whether the driver hands over every BLOB value of a
// row in memory of its own, never written again: then a reader may keep a
// value it scanned as a []byte (through a sql.Scanner or sql.RawBytes)
// past the next row instead of copying it. True for SQLite, whose driver
// copies each value out of the database engine; pgx reuses its buffers.
func (db *DB) FreshBlobs() bool { return db.Dialect == SQLite }

// Close closes both pools.
func (db *DB) Close() error {
	if db.stop != nil {
		db.closeOnce.Do(func() {
			close(db.stop)
			<-db.done
			// Leave a small WAL behind: best effort, another process may
			// be using the database.
			db.W.Exec("PRAGMA wal_checkpoint(TRUNCATE)") //nolint:errcheck // best effort
		})
	}
	err := db.W.Close()
	if db.R != db.W {
		err = errors.Join(err, db.R.Close())
	}
	return err
}

// Rebind rewrites a query written with ? placeholders for the dialect.
// Queries must not contain a literal question mark.
func (db *DB) Rebind(q string) string {
	if db.Dialect != Postgres {
		return q
	}
	// Numbered parameters ($1, $2, ...) already in q keep their numbers;
	// each ? takes the next number after the largest of them, as SQLite
	// numbers a ? after a numbered parameter, so one text serves both.
	n := maxNumbered(q)
	var b strings.Builder
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// maxNumbered returns the largest n of the numbered parameters $n in q, or 0.
func maxNumbered(q string) int {
	most := 0
	for i := 0; i < len(q); i++ {
		if q[i] != '$' {
			continue
		}
		j := i + 1
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		if k, err := strconv.Atoi(q[i+1 : j]); err == nil && k > most {
			most = k
		}
		i = j - 1
	}
	return most
}

// Prepare prepares a query (written with ? placeholders) on the pool that
// runs it.
func (db *DB) Prepare(ctx context.Context, pool *sql.DB, q string) (*sql.Stmt, error) {
	st, err := pool.PrepareContext(ctx, db.Rebind(q))
	if err != nil {
		return nil, fmt.Errorf("sqldb: prepare %q: %w", q, err)
	}
	return st, nil
}

// BeginWrite starts a write transaction: IMMEDIATE on SQLite, READ COMMITTED
// on PostgreSQL (callers guard their rows with conditional updates).
func (db *DB) BeginWrite(ctx context.Context) (*sql.Tx, error) {
	return db.W.BeginTx(ctx, nil)
}

// BeginRead starts a read-only transaction that sees one snapshot of the
// database: a deferred transaction in SQLite's WAL mode, REPEATABLE READ in
// PostgreSQL.
func (db *DB) BeginRead(ctx context.Context) (*sql.Tx, error) {
	if db.Dialect == Postgres {
		return db.R.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	}
	if db.R == db.W {
		// The single in-memory connection: a plain transaction.
		return db.R.BeginTx(ctx, nil)
	}
	// ReadOnly makes the driver issue a deferred BEGIN.
	return db.R.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
}

// migrationLockID is the PostgreSQL advisory lock key that serializes the
// migrations of every Loom component in a database.
const migrationLockID = 0x4c6f6f6d // "Loom"

// OpenMigrated opens the database at dsn, applies the migrations of
// component found under the directory "migrations" of fsys (see Migrate),
// then runs setup, which prepares the store over the database. On any error
// nothing stays open. It is the one body of the SQL stores' Open functions.
func OpenMigrated(ctx context.Context, dsn string, opts *Options, component string, fsys fs.FS, setup func(*DB) error) (*DB, error) {
	migrations, err := fs.Sub(fsys, "migrations")
	if err != nil {
		return nil, err
	}
	db, err := Open(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx, component, migrations); err != nil {
		db.Close()
		return nil, err
	}
	if err := setup(db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Migrate applies the migrations of a component that the database has not
// applied yet. fsys holds one directory per dialect ("sqlite", "postgres")
// of files named NNNN_description.sql, applied in order, each in the same
// transaction as the bump of the component's row in loom_schema_version.
// It is safe when several processes open the same database at once:
// PostgreSQL holds an advisory lock for the duration, SQLite an immediate
// (write) transaction.
func (db *DB) Migrate(ctx context.Context, component string, fsys fs.FS) error {
	dir := string(db.Dialect)
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return fmt.Errorf("sqldb: migrations of %s: %w", component, err)
	}
	type migration struct {
		version int
		name    string
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return fmt.Errorf("sqldb: migration %s of %s: bad file name", e.Name(), component)
		}
		ms = append(ms, migration{v, e.Name()})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })

	conn, err := db.W.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqldb: migrate %s: %w", component, err)
	}
	defer conn.Close()
	if db.Dialect == Postgres {
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", migrationLockID); err != nil {
			return fmt.Errorf("sqldb: migrate %s: lock: %w", component, err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLockID) //nolint:errcheck // the lock also ends with the session
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqldb: migrate %s: %w", component, err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS loom_schema_version (
		component TEXT PRIMARY KEY,
		version INTEGER NOT NULL
	)`); err != nil {
		return fmt.Errorf("sqldb: migrate %s: %w", component, err)
	}
	var current int
	err = tx.QueryRowContext(ctx, db.Rebind("SELECT version FROM loom_schema_version WHERE component = ?"), component).Scan(&current)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqldb: migrate %s: %w", component, err)
	}
	for _, m := range ms {
		if m.version <= current {
			continue
		}
		body, err := fs.ReadFile(fsys, path.Join(dir, m.name))
		if err != nil {
			return fmt.Errorf("sqldb: migrate %s: %w", component, err)
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			return fmt.Errorf("sqldb: migrate %s: apply %s: %w", component, m.name, err)
		}
		current = m.version
	}
	if _, err := tx.ExecContext(ctx, db.Rebind(`INSERT INTO loom_schema_version (component, version) VALUES (?, ?)
		ON CONFLICT (component) DO UPDATE SET version = excluded.version`), component, current); err != nil {
		return fmt.Errorf("sqldb: migrate %s: %w", component, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqldb: migrate %s: %w", component, err)
	}
	return nil
}
