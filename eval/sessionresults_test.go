package eval

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/loomkit/loom/session/sqlsession"
)

func TestSessionResults(t *testing.T) {
	ctx := context.Background()
	sessions, err := sqlsession.NewService(ctx, "sqlite://"+filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sessions.Close()
	st := &SessionResults{Store: NewDirStore(t.TempDir()), Sessions: sessions}
	r, err := ReadResultFile("testdata/adk.evalset_result.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SaveResult(ctx, "home", r); err != nil {
		t.Fatal(err)
	}
	ids, err := st.ListResults(ctx, "home")
	if err != nil || len(ids) != 1 || ids[0] != r.EvalSetResultID {
		t.Fatalf("ids %v %v", ids, err)
	}
	back, err := st.GetResult(ctx, "home", ids[0])
	if err != nil {
		t.Fatal(err)
	}
	a, _ := r.MarshalJSON()
	b, _ := back.MarshalJSON()
	if !bytes.Equal(a, b) {
		t.Errorf("stored result differs:\n%s\n%s", a, b)
	}
	if _, err := st.GetResult(ctx, "home", "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing result: %v", err)
	}
	// Sets still go to the wrapped store.
	if err := st.CreateSet(ctx, "home", &Set{EvalSetID: "s"}); err != nil {
		t.Fatal(err)
	}
	if sets, _ := st.ListSets(ctx, "home"); len(sets) != 1 {
		t.Errorf("sets %v", sets)
	}
	// The results are sessions of the reserved user only.
	if res, _ := sessions.List(ctx, "home", "u1", nil); len(res.Sessions) != 0 {
		t.Errorf("a user sees %d result sessions", len(res.Sessions))
	}
}
