package llmagent_test

import (
	"context"
	"iter"
	"sync"

	"google.golang.org/genai"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/model"
)

// llmFunc adapts a function to model.LLM.
type llmFunc struct {
	name string
	gen  func(ctx context.Context, req *model.Request, stream bool) func(func(*model.Response, error) bool)
}

func (l llmFunc) Name() string { return l.name }
func (l llmFunc) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return iter.Seq2[*model.Response, error](l.gen(ctx, req, stream))
}

// memArtifacts is a tiny artifact store for these tests.
type memArtifacts struct {
	mu   sync.Mutex
	data map[artifact.Key][]*genai.Part
}

func newMemArtifacts() *memArtifacts { return &memArtifacts{data: map[artifact.Key][]*genai.Part{}} }

func (m *memArtifacts) Save(_ context.Context, k artifact.Key, p *genai.Part) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data[k] = append(m.data[k], p)
	return int64(len(m.data[k]) - 1), nil
}
func (m *memArtifacts) Load(_ context.Context, k artifact.Key, v int64) (*genai.Part, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.data[k]
	if len(ps) == 0 {
		return nil, artifact.ErrNotFound
	}
	if v < 0 {
		return ps[len(ps)-1], nil
	}
	return ps[v], nil
}
func (m *memArtifacts) List(context.Context, string, string, string) ([]string, error) {
	return nil, nil
}
func (m *memArtifacts) Versions(context.Context, artifact.Key) ([]int64, error)  { return nil, nil }
func (m *memArtifacts) Delete(context.Context, artifact.Key) error               { return nil }
func (m *memArtifacts) DeleteVersion(context.Context, artifact.Key, int64) error { return nil }
func (m *memArtifacts) DeleteSession(context.Context, string, string, string) error {
	return nil
}
func (m *memArtifacts) Close() error { return nil }
