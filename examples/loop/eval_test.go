package loop_test

import (
	"testing"

	"github.com/loomkit/loom/eval/evaltest"
	"github.com/loomkit/loom/examples/loop"
)

// TestEvalSet runs the eval set the example ships against its offline
// model: every case passes the default criteria.
func TestEvalSet(t *testing.T) {
	ag, err := loop.New(loop.Offline())
	if err != nil {
		t.Fatal(err)
	}
	evaltest.Check(t, ag, "loop.evalset.json")
}
