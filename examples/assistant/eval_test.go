package assistant_test

import (
	"testing"

	"github.com/loomkit/loom/eval/evaltest"
	"github.com/loomkit/loom/examples/assistant"
)

// TestEvalSet runs the eval set the example ships against its offline
// model: every case passes the default criteria.
func TestEvalSet(t *testing.T) {
	ag, err := assistant.New(assistant.Offline())
	if err != nil {
		t.Fatal(err)
	}
	evaltest.Check(t, ag, "assistant.evalset.json")
}
