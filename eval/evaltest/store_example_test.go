package evaltest_test

import (
	"testing"

	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/eval/evaltest"
)

// A store of your own runs the suite from its tests, with an empty store
// for each test.
func ExampleTestStore() {
	_ = func(t *testing.T) {
		evaltest.TestStore(t, func(t *testing.T) eval.Store { return eval.NewDirStore(t.TempDir()) })
	}
}
