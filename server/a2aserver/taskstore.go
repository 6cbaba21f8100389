package a2aserver

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/a2aproject/a2a-go/a2a"
)

// taskStore keeps at most max tasks in memory, as JSON, dropping the least
// recently saved first. Tasks are copied in and out, so callers never share
// one.
type taskStore struct {
	max int

	mu    sync.Mutex
	tasks map[a2a.TaskID]*list.Element // of storedTask
	order *list.List                   // most recently saved first
}

type storedTask struct {
	id   a2a.TaskID
	data []byte
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.tasks[task.ID]; ok {
		el.Value.(*storedTask).data = data
		s.order.MoveToFront(el)
		return nil
	}
	s.tasks[task.ID] = s.order.PushFront(&storedTask{id: task.ID, data: data})
	for s.order.Len() > s.max {
		old := s.order.Remove(s.order.Back()).(*storedTask)
		delete(s.tasks, old.id)
	}
	return nil
}

// Get implements a2asrv.TaskStore.
func (s *taskStore) Get(ctx context.Context, id a2a.TaskID) (*a2a.Task, error) {
	s.mu.Lock()
	el, ok := s.tasks[id]
	var data []byte
	if ok {
		data = el.Value.(*storedTask).data
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
