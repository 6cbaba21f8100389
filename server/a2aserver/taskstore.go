package a2aserver

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/loomkit/loom/server"
)

// taskStore keeps at most max tasks in memory, as JSON. Beyond the bound
// it drops the least recently saved finished task (completed, failed,
// canceled, rejected), and only when every task kept is unfinished the
// least recently saved of those, so that a paused task is not lost to the
// tasks that finished after it. Tasks are copied in and out, so callers
// never share one. A task saved for a caller that server.Config.Authenticate
// bound to a user belongs to that user: any other caller reads it as not
// found, so it can neither get, cancel nor continue it.
type taskStore struct {
	max int

	mu    sync.Mutex
	tasks map[a2a.TaskID]*list.Element // of storedTask
	// finished and unfinished hold the tasks by terminal state, most
	// recently saved first.
	finished, unfinished *list.List
}

type storedTask struct {
	id    a2a.TaskID
	owner string // the authenticated user who started the task, or ""
	data  []byte
	done  bool // in a terminal state: on the finished list
}

func newTaskStore(max int) *taskStore {
	return &taskStore{max: max, tasks: map[a2a.TaskID]*list.Element{}, finished: list.New(), unfinished: list.New()}
}

// listOf returns the list a task in a terminal state or not is kept on.
func (s *taskStore) listOf(done bool) *list.List {
	if done {
		return s.finished
	}
	return s.unfinished
}

// Save implements a2asrv.TaskStore.
func (s *taskStore) Save(ctx context.Context, task *a2a.Task) error {
	if task == nil || task.ID == "" {
		return fmt.Errorf("a2aserver: task without an id")
	}
	data, err := json.Marshal(task)
	if err != nil {
		return fmt.Errorf("a2aserver: encode task: %w", err)
	}
	owner, _ := server.AuthenticatedUser(ctx)
	done := task.Status.State.Terminal()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &storedTask{id: task.ID, owner: owner, data: data, done: done}
	if el, ok := s.tasks[task.ID]; ok {
		old := el.Value.(*storedTask)
		if old.owner != owner {
			return a2a.ErrTaskNotFound
		}
		s.listOf(old.done).Remove(el)
	}
	s.tasks[task.ID] = s.listOf(done).PushFront(st)
	for len(s.tasks) > s.max {
		l := s.finished
		if l.Len() == 0 {
			l = s.unfinished
		}
		old := l.Remove(l.Back()).(*storedTask)
		delete(s.tasks, old.id)
	}
	return nil
}

// Get implements a2asrv.TaskStore.
func (s *taskStore) Get(ctx context.Context, id a2a.TaskID) (*a2a.Task, error) {
	caller, _ := server.AuthenticatedUser(ctx)
	s.mu.Lock()
	el, ok := s.tasks[id]
	var data []byte
	if ok {
		st := el.Value.(*storedTask)
		ok = st.owner == caller
		data = st.data
	}
	s.mu.Unlock()
	if !ok {
		return nil, a2a.ErrTaskNotFound
	}
	var t a2a.Task
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("a2aserver: decode task: %w", err)
	}
	return &t, nil
}
