package temporal_test

import (
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/loomkit/loom/durable/temporal"
)

// TestSignalledWorkflowReplays: the history of a session workflow that
// took its messages as signals and ran each in Mark and Step activities
// (testdata/paused-signalled.json: a message answered, then one paused on
// a confirmation, the workflow waiting for the answer) replays on today's
// workflow without a nondeterminism error, so that a session paused
// before an upgrade is continued after it.
func TestSignalledWorkflowReplays(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(temporal.SessionWorkflow, workflow.RegisterOptions{Name: temporal.WorkflowName})
	if err := r.ReplayWorkflowHistoryFromJSONFile(quiet, "testdata/paused-signalled.json"); err != nil {
		t.Fatal(err)
	}
}
