package sqleval_test

import (
	"context"
	"fmt"

	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/eval/sqleval"
)

// Results kept in a database, beside the sessions; sets stay in a
// directory.
func ExampleOpen() {
	ctx := context.Background()
	results, err := sqleval.Open(ctx, "sqlite::memory:")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer results.Close()
	store := eval.WithResults(eval.NewDirStore("./evals"), results)

	err = store.SaveResult(ctx, "assistant", &eval.SetResult{EvalSetResultID: "assistant_smoke_1700000000.000000", EvalSetID: "smoke"})
	ids, _ := store.ListResults(ctx, "assistant")
	fmt.Println(ids, err)
	// Output: [assistant_smoke_1700000000.000000] <nil>
}
