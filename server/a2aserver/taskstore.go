package a2aserver

import (
	"container/list"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session"
)

// taskStore keeps at most max tasks, of at most maxBytes in all, in
// memory. Beyond either bound it drops the least recently saved finished
// task (completed, failed, canceled, rejected), and only when every task
// kept is unfinished the least recently saved of those, so that a paused
// task is not lost to the tasks that finished after it; the task just
// saved is always kept, even alone beyond maxBytes.
//
// Tasks are copied in and out, so callers never share one, but the copy
// is of their structure only: strings, immutable, are shared, so that
// keeping a task costs no copy of its text, files and data (the SDK saves
// a task on every event; encoding it each time would copy all of it). A
// task's size is that of its JSON encoding, estimated (taskSize).
//
// A task saved for a caller that server.Config.Authenticate bound to a
// user belongs to that user: any other caller reads it as not found, so it
// can neither get, cancel nor continue it.
type taskStore struct {
	max      int
	maxBytes int64

	mu    sync.Mutex
	tasks map[a2a.TaskID]*list.Element // of storedTask
	bytes int64                        // the sizes of the tasks kept
	// finished and unfinished hold the tasks by terminal state, most
	// recently saved first.
	finished, unfinished *list.List
}

type storedTask struct {
	id    a2a.TaskID
	owner string // the authenticated user who started the task, or ""
	task  *a2a.Task
	size  int64
	done  bool // in a terminal state: on the finished list
}

func newTaskStore(max int, maxBytes int64) *taskStore {
	return &taskStore{max: max, maxBytes: maxBytes, tasks: map[a2a.TaskID]*list.Element{}, finished: list.New(), unfinished: list.New()}
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
	owner, _ := server.AuthenticatedUser(ctx)
	done := task.Status.State.Terminal()
	st := &storedTask{id: task.ID, owner: owner, task: cloneTask(task), size: taskSize(task), done: done}
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.tasks[task.ID]; ok {
		old := el.Value.(*storedTask)
		if old.owner != owner {
			return a2a.ErrTaskNotFound
		}
		s.listOf(old.done).Remove(el)
		s.bytes -= old.size
	}
	s.tasks[task.ID] = s.listOf(done).PushFront(st)
	s.bytes += st.size
	for len(s.tasks) > s.max || s.bytes > s.maxBytes {
		l := s.finished
		if l.Len() == 0 || l.Len() == 1 && l.Front().Value == st {
			l = s.unfinished
		}
		if l.Len() == 0 || l.Back().Value == st {
			break // only the task just saved is left
		}
		old := l.Remove(l.Back()).(*storedTask)
		delete(s.tasks, old.id)
		s.bytes -= old.size
	}
	return nil
}

// Get implements a2asrv.TaskStore.
func (s *taskStore) Get(ctx context.Context, id a2a.TaskID) (*a2a.Task, error) {
	caller, _ := server.AuthenticatedUser(ctx)
	s.mu.Lock()
	el, ok := s.tasks[id]
	var task *a2a.Task
	if ok {
		st := el.Value.(*storedTask)
		ok = st.owner == caller
		task = st.task
	}
	s.mu.Unlock()
	if !ok {
		return nil, a2a.ErrTaskNotFound
	}
	return cloneTask(task), nil // a stored task is never changed: no lock needed
}

// cloneTask returns a copy of t that shares no mutable memory with it:
// its structs, slices and maps are copied, its strings shared.
func cloneTask(t *a2a.Task) *a2a.Task {
	c := *t
	c.Artifacts = cloneSlice(t.Artifacts, cloneArtifact)
	c.History = cloneSlice(t.History, cloneMessage)
	c.Metadata = event.CloneMap(t.Metadata)
	c.Status.Message = cloneMessage(t.Status.Message)
	if t.Status.Timestamp != nil {
		ts := *t.Status.Timestamp
		c.Status.Timestamp = &ts
	}
	return &c
}

func cloneSlice[T any](s []T, clone func(T) T) []T {
	if s == nil {
		return nil
	}
	out := make([]T, len(s))
	for i, v := range s {
		out[i] = clone(v)
	}
	return out
}

func cloneMessage(m *a2a.Message) *a2a.Message {
	if m == nil {
		return nil
	}
	c := *m
	c.Extensions = slices.Clone(m.Extensions)
	c.Metadata = event.CloneMap(m.Metadata)
	c.Parts = cloneSlice(m.Parts, clonePart)
	c.ReferenceTasks = slices.Clone(m.ReferenceTasks)
	return &c
}

func cloneArtifact(a *a2a.Artifact) *a2a.Artifact {
	if a == nil {
		return nil
	}
	c := *a
	c.Extensions = slices.Clone(a.Extensions)
	c.Metadata = event.CloneMap(a.Metadata)
	c.Parts = cloneSlice(a.Parts, clonePart)
	return &c
}

// clonePart copies a part, which is a value (or a pointer) of the SDK's
// part types; the copy is always a value.
func clonePart(p a2a.Part) a2a.Part {
	switch p := p.(type) {
	case a2a.TextPart:
		p.Metadata = event.CloneMap(p.Metadata)
		return p
	case *a2a.TextPart:
		if p != nil {
			return clonePart(*p)
		}
	case a2a.DataPart:
		p.Data = event.CloneMap(p.Data)
		p.Metadata = event.CloneMap(p.Metadata)
		return p
	case *a2a.DataPart:
		if p != nil {
			return clonePart(*p)
		}
	case a2a.FilePart:
		p.Metadata = event.CloneMap(p.Metadata)
		if f, ok := p.File.(*a2a.FileBytes); ok && f != nil {
			p.File = *f
		} else if f, ok := p.File.(*a2a.FileURI); ok && f != nil {
			p.File = *f
		}
		return p
	case *a2a.FilePart:
		if p != nil {
			return clonePart(*p)
		}
	}
	return p
}

// taskSize estimates the size of t's JSON encoding: its strings, plus a
// few bytes for each field, part and value.
func taskSize(t *a2a.Task) int64 {
	n := int64(64 + len(t.ID) + len(t.ContextID))
	for _, a := range t.Artifacts {
		if a != nil {
			n += 64 + int64(len(a.ID)+len(a.Name)+len(a.Description)) + stringsSize(a.Extensions) + valueSize(a.Metadata, 0) + partsSize(a.Parts)
		}
	}
	for _, m := range t.History {
		n += messageSize(m)
	}
	return n + valueSize(t.Metadata, 0) + messageSize(t.Status.Message)
}

func messageSize(m *a2a.Message) int64 {
	if m == nil {
		return 0
	}
	n := int64(64+len(m.ID)+len(m.ContextID)+len(m.TaskID)+len(m.Role)) + stringsSize(m.Extensions) + valueSize(m.Metadata, 0) + partsSize(m.Parts)
	for _, id := range m.ReferenceTasks {
		n += int64(4 + len(id))
	}
	return n
}

func stringsSize(s []string) int64 {
	var n int64
	for _, v := range s {
		n += int64(4 + len(v))
	}
	return n
}

func partsSize(parts []a2a.Part) int64 {
	var n int64
	for _, p := range parts {
		n += 32 + valueSize(p.Meta(), 0)
		switch p := p.(type) {
		case a2a.TextPart:
			n += int64(len(p.Text))
		case *a2a.TextPart:
			n += int64(len(p.Text))
		case a2a.DataPart:
			n += valueSize(p.Data, 0)
		case *a2a.DataPart:
			n += valueSize(p.Data, 0)
		case a2a.FilePart:
			n += fileSize(p.File)
		case *a2a.FilePart:
			n += fileSize(p.File)
		}
	}
	return n
}

func fileSize(f a2a.FilePartContent) int64 {
	switch f := f.(type) {
	case a2a.FileBytes:
		return int64(32 + len(f.Name) + len(f.MimeType) + len(f.Bytes))
	case *a2a.FileBytes:
		return int64(32 + len(f.Name) + len(f.MimeType) + len(f.Bytes))
	case a2a.FileURI:
		return int64(32 + len(f.Name) + len(f.MimeType) + len(f.URI))
	case *a2a.FileURI:
		return int64(32 + len(f.Name) + len(f.MimeType) + len(f.URI))
	}
	return 0
}

// valueSize estimates the JSON size of a JSON-like value; other values
// count as a number, and values nested deeper than the stores keep
// (session.MaxValueDepth) are not counted.
func valueSize(v any, depth int) int64 {
	if depth > session.MaxValueDepth {
		return 0
	}
	switch x := v.(type) {
	case string:
		return int64(2 + len(x))
	case map[string]any:
		n := int64(2)
		for k, e := range x {
			n += int64(4+len(k)) + valueSize(e, depth+1)
		}
		return n
	case []any:
		n := int64(2)
		for _, e := range x {
			n += 1 + valueSize(e, depth+1)
		}
		return n
	}
	return 8
}
