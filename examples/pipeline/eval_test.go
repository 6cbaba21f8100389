package pipeline_test

import (
	"testing"

	"github.com/loomkit/loom/eval/evaltest"
	"github.com/loomkit/loom/examples/pipeline"
)

// TestEvalSet runs the eval set the example ships against its offline
// model: every case passes the default criteria.
func TestEvalSet(t *testing.T) {
	ag, err := pipeline.New(pipeline.Offline())
	if err != nil {
		t.Fatal(err)
	}
	evaltest.Check(t, ag, "pipeline.evalset.json")
}
