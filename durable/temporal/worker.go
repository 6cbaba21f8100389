package temporal

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/loomkit/loom/runner"
)

// DefaultTaskQueue is the task queue workers poll and clients start
// workflows on when none is configured.
const DefaultTaskQueue = "loom"

// Registry is where workflows and activities are registered: a Temporal
// worker, or the test environment of go.temporal.io/sdk/testsuite.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register registers the session workflow and the (local) activities that
// run the invocations of apps on w. A process may register the same apps on
// any number of workers: the apps' session services must be shared by all
// of them (a database, not memory) and by the clients that start
// invocations. Every app must be resumable (runner.Config.Resumable): a turn
// taken over by another worker continues the invocation from its
// checkpoints.
func Register(w Registry, apps ...*runner.Runner) error {
	acts, err := newActivities(apps)
	if err != nil {
		return err
	}
	w.RegisterWorkflowWithOptions(SessionWorkflow, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterActivityWithOptions(acts.mark, activity.RegisterOptions{Name: activityMark})
	w.RegisterActivityWithOptions(acts.turn, activity.RegisterOptions{Name: activityTurn})
	// The activity of the workflows that took their messages as signals.
	w.RegisterActivityWithOptions(acts.step, activity.RegisterOptions{Name: activityStep})
	return nil
}

// NewWorker returns a worker of c on taskQueue (DefaultTaskQueue when
// empty) that runs the invocations of apps. Start it with Run or Start.
// It encodes payloads with c's converters: dial c with Codec.ClientOptions,
// with the keys of the clients that start the workflows.
func NewWorker(c client.Client, taskQueue string, apps ...*runner.Runner) (worker.Worker, error) {
	if taskQueue == "" {
		taskQueue = DefaultTaskQueue
	}
	w := worker.New(c, taskQueue, worker.Options{})
	if err := Register(w, apps...); err != nil {
		return nil, err
	}
	return w, nil
}
