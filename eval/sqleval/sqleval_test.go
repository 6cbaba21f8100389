package sqleval_test

import (
	"testing"

	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/eval/evaltest"
	"github.com/loomkit/loom/eval/sqleval"
	"github.com/loomkit/loom/internal/sqldb/sqldbtest"
)

func open(t *testing.T, dsn string) *sqleval.Results {
	t.Helper()
	r, err := sqleval.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestConformanceSQLite runs the result store suite on SQLite.
func TestConformanceSQLite(t *testing.T) {
	evaltest.TestResultStore(t, func(t *testing.T) eval.ResultStore { return open(t, sqldbtest.SQLiteURL(t)) })
}

// TestConformancePostgres runs the result store suite on PostgreSQL.
func TestConformancePostgres(t *testing.T) {
	sqldbtest.PostgresServer(t)
	evaltest.TestResultStore(t, func(t *testing.T) eval.ResultStore { return open(t, sqldbtest.PostgresURL(t)) })
}

// TestReopen checks that results outlive the store that saved them and
// that opening a database twice migrates it once.
func TestReopen(t *testing.T) {
	dsn := sqldbtest.SQLiteURL(t)
	a := open(t, dsn)
	r, err := eval.ReadResultFile("../testdata/adk.evalset_result.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SaveResult(t.Context(), "home", r); err != nil {
		t.Fatal(err)
	}
	a.Close()
	b := open(t, dsn)
	got, err := b.GetResult(t.Context(), "home", r.EvalSetResultID)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := r.MarshalJSON()
	if back, _ := got.MarshalJSON(); string(back) != string(want) {
		t.Errorf("read back after reopening:\n%s\nwant\n%s", back, want)
	}
}
