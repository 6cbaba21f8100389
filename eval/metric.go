package eval

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/loomkit/loom/model"
)

// Names of the built-in metrics, as ADK names them.
const (
	TrajectoryMetric    = "tool_trajectory_avg_score"
	ResponseMatchMetric = "response_match_score"
	JudgedMatchMetric   = "final_response_match_v2"
	RubricMetric        = "rubric_based_final_response_quality_v1"
)

// Scorer computes one metric over the invocations of a run of a case.
// Implement it (and register a [Factory]) to add a metric of your own.
type Scorer interface {
	Score(ctx context.Context, in *ScoreInput) (*Score, error)
}

// ScoreInput is what a scorer judges.
type ScoreInput struct {
	// Case is the eval case.
	Case *Case
	// Actual are the invocations the agent produced, in order.
	Actual []*Invocation
	// Expected are the case's expected invocations; nil for a scenario case.
	Expected []*Invocation
	// Criterion is the metric's criterion (threshold and options).
	Criterion *Criterion
}

// Score is a metric's result over a run: an overall score and one per
// invocation. A nil score means the metric could not be evaluated.
type Score struct {
	Overall       *float64
	PerInvocation []InvocationScore
	Details       *ResultDetails
}

// InvocationScore is a metric's score for one invocation.
type InvocationScore struct {
	Score   *float64
	Details *ResultDetails
}

// Factory builds a scorer from a criterion.
type Factory func(c *Criterion, env *Env) (Scorer, error)

// Env is what factories may use: the models that judge.
type Env struct {
	// Judge is the judge model used when a criterion names none.
	Judge model.LLM
	// Models opens a model by the name a criterion's judge options give.
	// Optional: without it, a named judge model is an error unless it is
	// Judge's own name.
	Models func(ctx context.Context, name string) (model.LLM, error)
}

// judge returns the judge a criterion asks for.
func (e *Env) judge(ctx context.Context, c *Criterion) (model.LLM, error) {
	name := ""
	if c != nil && c.JudgeOptions != nil {
		name = c.JudgeOptions.JudgeModel
	}
	if e != nil && e.Judge != nil && (name == "" || name == e.Judge.Name()) {
		return e.Judge, nil
	}
	if name != "" && e != nil && e.Models != nil {
		return e.Models(ctx, name)
	}
	if name != "" {
		return nil, fmt.Errorf("no judge model %q available", name)
	}
	return nil, fmt.Errorf("this metric needs a judge model")
}

// Registry maps metric names to factories. It is safe for concurrent use.
type Registry struct {
	mu sync.RWMutex
	m  map[string]Factory
}

// NewRegistry returns a registry of the built-in metrics.
func NewRegistry() *Registry {
	r := &Registry{m: map[string]Factory{}}
	r.Register(TrajectoryMetric, func(c *Criterion, _ *Env) (Scorer, error) {
		mt := Exact
		if c.MatchType != nil {
			mt = *c.MatchType
		}
		return Trajectory{Match: mt}, nil
	})
	r.Register(ResponseMatchMetric, func(*Criterion, *Env) (Scorer, error) { return ResponseMatch{}, nil })
	r.Register(JudgedMatchMetric, func(c *Criterion, env *Env) (Scorer, error) {
		return &JudgedMatch{Env: env}, nil
	})
	r.Register(RubricMetric, func(c *Criterion, env *Env) (Scorer, error) {
		return &RubricQuality{Env: env}, nil
	})
	r.Register(HallucinationMetric, func(c *Criterion, env *Env) (Scorer, error) {
		return &Grounding{Env: env}, nil
	})
	r.Register(ToolUseRubricMetric, func(c *Criterion, env *Env) (Scorer, error) {
		return &RubricQuality{Env: env, Subject: RubricToolUse}, nil
	})
	r.Register(TrajectoryRubricMetric, func(c *Criterion, env *Env) (Scorer, error) {
		return &RubricQuality{Env: env, Subject: RubricConversation}, nil
	})
	r.Register(SimulatorQualityMetric, func(c *Criterion, env *Env) (Scorer, error) {
		return &SimulatorQuality{Env: env}, nil
	})
	r.Register(TaskSuccessMetric, func(c *Criterion, env *Env) (Scorer, error) {
		return &ConversationJudge{Env: env, Question: taskSuccessQuestion}, nil
	})
	r.Register(MultiTurnTrajectoryMetric, func(c *Criterion, env *Env) (Scorer, error) {
		return &ConversationJudge{Env: env, Question: trajectoryQuestion}, nil
	})
	r.Register(MultiTurnToolUseMetric, func(c *Criterion, env *Env) (Scorer, error) {
		return &ConversationJudge{Env: env, Question: toolUseQuestion}, nil
	})
	r.Register(SafetyMetric, func(c *Criterion, env *Env) (Scorer, error) {
		return &Safety{Env: env}, nil
	})
	r.Register(CoherenceMetric, func(c *Criterion, env *Env) (Scorer, error) {
		return &Coherence{Env: env}, nil
	})
	return r
}

// Register adds or replaces the factory of a metric.
func (r *Registry) Register(name string, f Factory) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[name] = f
}

// Names returns the registered metric names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Scorer builds the scorer of a metric.
func (r *Registry) Scorer(m *Metric, env *Env) (Scorer, error) {
	r.mu.RLock()
	f, ok := r.m[m.MetricName]
	r.mu.RUnlock()
	if !ok && m.CustomFunctionPath != "" {
		return nil, fmt.Errorf("metric %q is custom code (%s in ADK, Python); register a Go scorer under the name %q with eval.Registry.Register to compute it", m.MetricName, m.CustomFunctionPath, m.MetricName)
	}
	if !ok {
		return nil, fmt.Errorf("unknown metric %q (known: %v)", m.MetricName, r.Names())
	}
	if c := m.criterion(); c != nil && c.JudgeOptions != nil && c.JudgeOptions.NumSamples > MaxJudgeSamples {
		return nil, fmt.Errorf("metric %s: num_samples %d is over the limit of %d", m.MetricName, c.JudgeOptions.NumSamples, MaxJudgeSamples)
	}
	if _, err := judgeConfig(m.criterion()); err != nil {
		return nil, fmt.Errorf("metric %s: %w", m.MetricName, err)
	}
	s, err := f(m.criterion(), env)
	if err != nil {
		return nil, fmt.Errorf("metric %s: %w", m.MetricName, err)
	}
	return s, nil
}

// mean averages the non-nil scores; nil if there are none.
func mean(scores []InvocationScore) *float64 {
	sum, n := 0.0, 0
	for _, s := range scores {
		if s.Score != nil {
			sum += *s.Score
			n++
		}
	}
	if n == 0 {
		return nil
	}
	m := sum / float64(n)
	return &m
}

func ptr(f float64) *float64 { return &f }

// statusOf is a score's status against a threshold.
func statusOf(score *float64, threshold float64) Status {
	switch {
	case score == nil:
		return NotEvaluated
	case *score >= threshold:
		return Passed
	}
	return Failed
}
