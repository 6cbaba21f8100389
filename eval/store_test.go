package eval_test

import (
	"testing"

	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/eval/evaltest"
)

// TestConformanceDirStore runs the store suite on the directory store.
func TestConformanceDirStore(t *testing.T) {
	evaltest.TestStore(t, func(t *testing.T) eval.Store { return eval.NewDirStore(t.TempDir()) })
}

// TestConformanceWithResults runs the store suite on sets in a directory
// and results in another.
func TestConformanceWithResults(t *testing.T) {
	evaltest.TestStore(t, func(t *testing.T) eval.Store {
		return eval.WithResults(eval.NewDirStore(t.TempDir()), eval.NewDirStore(t.TempDir()))
	})
}
