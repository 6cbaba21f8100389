// Package fallback chains models: a [Model] sends a request to the first
// model of an ordered list and moves on to the next when a call fails with
// an error that another model may not have (rate limits, server errors,
// timeouts, content the provider cannot carry).
//
// Each model keeps its own retry policy (model/retry): the chain moves on
// once a model has given up. A streamed call moves on only while nothing has
// been yielded; once a chunk is out, an error ends the stream, as in
// model/retry. Errors of the caller's context, and errors that say the
// request itself is wrong (400, 401, 403, 404), end the call at once: the
// next model would fail the same way, or the caller has gone.
//
// The responses of a model other than the first carry the attempts before
// it in their CustomMetadata (keys in MetadataKeys), so the events an agent
// stores, and the traces and usage reports built from them, show which
// model answered and why the others did not. Each failed attempt is also
// added as an event to the caller's OpenTelemetry span, when there is one.
package fallback

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/loomkit/loom/model"
)

// Keys of the CustomMetadata of a response from a model other than the
// first. They follow ADK's fallback plugin: fallback_triggered (true),
// original_model (the first model's name), fallback_model (the name of the
// model that answered), fallback_attempt (its position in the chain, 1 for
// the second model), error_code (the status or code of the last failure)
// and, Loom's addition, fallback_errors (every failure, in order, as
// {"model", "error"} objects).
const (
	KeyTriggered = "fallback_triggered"
	KeyOriginal  = "original_model"
	KeyModel     = "fallback_model"
	KeyAttempt   = "fallback_attempt"
	KeyErrorCode = "error_code"
	KeyErrors    = "fallback_errors"
)

// MetadataKeys lists the CustomMetadata keys a fallback response carries.
var MetadataKeys = []string{KeyTriggered, KeyOriginal, KeyModel, KeyAttempt, KeyErrorCode, KeyErrors}

// Model is a model.LLM that tries its models in order. It is safe for
// concurrent use when its models are.
type Model struct {
	models []model.LLM
	should func(error) bool
}

// Option configures a Model.
type Option func(*Model)

// WithShould replaces the rule that decides whether an error moves the call
// on to the next model (default: ShouldFallBack).
func WithShould(should func(error) bool) Option {
	return func(m *Model) { m.should = should }
}

// New returns a Model over models, tried in the order given. It needs at
// least one model and no nil one.
func New(models []model.LLM, opts ...Option) (*Model, error) {
	if len(models) == 0 {
		return nil, errors.New("fallback: no model")
	}
	for i, m := range models {
		if m == nil {
			return nil, fmt.Errorf("fallback: model %d is nil", i)
		}
	}
	fm := &Model{models: append([]model.LLM(nil), models...), should: ShouldFallBack}
	for _, o := range opts {
		o(fm)
	}
	if fm.should == nil {
		fm.should = ShouldFallBack
	}
	return fm, nil
}

// Name returns the first model's name: the model an agent is configured
// with.
func (m *Model) Name() string { return m.models[0].Name() }

// Models returns the chain's models in order.
func (m *Model) Models() []model.LLM { return append([]model.LLM(nil), m.models...) }

// ToolsWithSchema reports whether every model of the chain takes tools and a
// response schema in one request, so that a request built for the first one
// suits any of them.
func (m *Model) ToolsWithSchema() bool {
	for _, l := range m.models {
		if ts, ok := l.(model.ToolsWithSchema); !ok || !ts.ToolsWithSchema() {
			return false
		}
	}
	return true
}

// ShouldFallBack is the default rule: a *model.Error that is retryable
// (timeouts, transport failures, model/retry's exhausted attempts wrap
// them) or whose status is 408, 429 or 5xx, and content the provider
// cannot carry (model.ErrUnsupportedContent). Context errors never are.
func ShouldFallBack(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, model.ErrUnsupportedContent) {
		return true
	}
	var me *model.Error
	if !errors.As(err, &me) {
		return false
	}
	return me.Retryable || me.StatusCode == http.StatusRequestTimeout ||
		me.StatusCode == http.StatusTooManyRequests || me.StatusCode >= 500 && me.StatusCode <= 599
}

// failure is one failed attempt.
type failure struct {
	model string
	err   error
}

// Generate sends req to each model in turn until one answers or fails with
// an error that does not warrant the next model. When every model fails,
// the error is a *ChainError wrapping each failure.
func (m *Model) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		var failed []failure
		for i, l := range m.models {
			r := req
			if i > 0 && req != nil && req.Model != "" {
				// The override names the first model; the others
				// answer under their own names.
				c := *req
				c.Model = ""
				r = &c
			}
			yielded := false
			var err error
			for resp, e := range l.Generate(ctx, r, stream) {
				if e != nil {
					err = e
					break
				}
				yielded = true
				if len(failed) > 0 && resp != nil {
					resp = annotate(resp, m.models[0].Name(), l.Name(), i, failed)
				}
				if !yield(resp, nil) {
					return
				}
			}
			if err == nil {
				return
			}
			if yielded || ctx.Err() != nil || !m.should(err) || i == len(m.models)-1 {
				if len(failed) > 0 && !yielded {
					err = &ChainError{Failures: append(toErrors(failed), AttemptError{Model: l.Name(), Err: err})}
				}
				yield(nil, err)
				return
			}
			failed = append(failed, failure{model: l.Name(), err: err})
			if span := trace.SpanFromContext(ctx); span.IsRecording() {
				span.AddEvent("model fallback", trace.WithAttributes(
					attribute.String("loom.fallback.failed_model", l.Name()),
					attribute.String("loom.fallback.next_model", m.models[i+1].Name()),
					attribute.String("loom.fallback.error", err.Error()),
				))
			}
		}
	}
}

// annotate returns a copy of resp whose CustomMetadata records the fallback.
func annotate(resp *model.Response, original, answered string, attempt int, failed []failure) *model.Response {
	c := *resp
	md := make(map[string]any, len(resp.CustomMetadata)+len(MetadataKeys))
	maps.Copy(md, resp.CustomMetadata)
	errs := make([]any, len(failed))
	for i, f := range failed {
		errs[i] = map[string]any{"model": f.model, "error": f.err.Error()}
	}
	md[KeyTriggered] = true
	md[KeyOriginal] = original
	md[KeyModel] = answered
	md[KeyAttempt] = attempt
	md[KeyErrorCode] = errorCode(failed[len(failed)-1].err)
	md[KeyErrors] = errs
	c.CustomMetadata = md
	return &c
}

// errorCode is the status of a model error (or its code when it has no
// status), or "UNSUPPORTED_CONTENT", or "ERROR".
func errorCode(err error) string {
	var me *model.Error
	switch {
	case errors.As(err, &me) && me.StatusCode != 0:
		return strconv.Itoa(me.StatusCode)
	case me != nil && me.Code != "":
		return me.Code
	case errors.Is(err, model.ErrUnsupportedContent):
		return "UNSUPPORTED_CONTENT"
	}
	return "ERROR"
}

// AttemptError is the failure of one model of a chain.
type AttemptError struct {
	// Model is the failed model's name.
	Model string
	// Err is its error.
	Err error
}

// Error implements the error interface.
func (e AttemptError) Error() string { return e.Model + ": " + e.Err.Error() }

// Unwrap returns the model's error.
func (e AttemptError) Unwrap() error { return e.Err }

// ChainError reports that every model tried failed. errors.Is and
// errors.As see each model's error.
type ChainError struct {
	// Failures are the attempts in order.
	Failures []AttemptError
}

// Error implements the error interface.
func (e *ChainError) Error() string {
	s := "fallback: every model failed"
	for _, f := range e.Failures {
		s += "; " + f.Error()
	}
	return s
}

// Unwrap returns each attempt's error, last first, so that errors.As finds
// the last model's error before the others.
func (e *ChainError) Unwrap() []error {
	out := make([]error, len(e.Failures))
	for i, f := range e.Failures {
		out[len(out)-1-i] = f
	}
	return out
}

func toErrors(fs []failure) []AttemptError {
	out := make([]AttemptError, len(fs))
	for i, f := range fs {
		out[i] = AttemptError{Model: f.model, Err: f.err}
	}
	return out
}
