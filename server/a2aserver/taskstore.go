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

// taskStore keeps at most max tasks in memory, as JSON, dropping the least
// recently saved first. Tasks are copied in and out, so callers never share
// one. A task saved for a caller that server.Config.Authenticate bound to
// a user belongs to that user: any other caller reads it as not found, so
// it can neither get, cancel nor continue it.
type taskStore struct {
	max int

	mu    sync.Mutex
	tasks map[a2a.TaskID]*list.Element // of storedTask
	order *list.List                   // most recently saved first
}

type storedTask struct {
	id    a2a.TaskID
	owner string // the authenticated user who started the task, or ""
	data  []byte
}

func newTaskStore(max int) *taskStore {
	return &taskStore{max: max, tasks: map[a2a.TaskID]*list.Element{}, order: list.New()}
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.tasks[task.ID]; ok {
		st := el.Value.(*storedTask)
		if st.owner != owner {
			return a2a.ErrTaskNotFound
		}
		st.data = data
		s.order.MoveToFront(el)
		return nil
	}
	s.tasks[task.ID] = s.order.PushFront(&storedTask{id: task.ID, owner: owner, data: data})
	for s.order.Len() > s.max {
		old := s.order.Remove(s.order.Back()).(*storedTask)
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
