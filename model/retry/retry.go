// Package retry is the one retry policy shared by Loom's model adapters.
//
// A [Policy] repeats a model call that failed with a transient error: HTTP
// 408, 429, 5xx (including Anthropic's 529 "overloaded"), network
// failures, bodies cut short, and attempts that waited longer than the
// policy's Timeout (two minutes by default) for a response. Waits grow
// exponentially with full jitter, a server's Retry-After is honoured, and
// the caller's context bounds everything. A streamed call is retried only
// while nothing has been yielded to the caller: once a chunk is out, an
// error ends the stream.
//
// Adapters report failures as *model.Error (Retryable set from the status)
// and attach a server-requested delay with [WithDelay]. When attempts run out
// the caller gets an [*ExhaustedError] that wraps the last *model.Error, so
// errors.As still finds it.
//
// The adapters in this module turn off their SDK's own retries, so this
// policy is the only one in force.
package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/loomkit/loom/model"
)

// Defaults used for zero fields of a [Policy].
const (
	DefaultMaxAttempts = 4
	DefaultBaseDelay   = 500 * time.Millisecond
	DefaultMaxDelay    = 30 * time.Second
	// DefaultTimeout bounds the wait for each response of an attempt when
	// Policy.Timeout is zero, so that a provider that stops answering is
	// given up on (and retried) instead of holding the call forever.
	DefaultTimeout = 2 * time.Minute
)

// Policy says how often and how patiently a model call is repeated. The
// zero value is the default policy. A Policy is safe for concurrent use once
// built; do not change its fields while calls are running.
type Policy struct {
	// MaxAttempts is the total number of attempts, the first included.
	// Zero means DefaultMaxAttempts; 1 disables retries.
	MaxAttempts int
	// BaseDelay is the backoff unit: attempt n waits a random duration in
	// [0, min(MaxDelay, BaseDelay*2^(n-1))). Zero means DefaultBaseDelay.
	BaseDelay time.Duration
	// MaxDelay caps a backoff wait. A Retry-After longer than MaxDelay ends
	// the retries: the server asked for more patience than the policy has.
	// Zero means DefaultMaxDelay.
	MaxDelay time.Duration
	// Timeout bounds the wait for each response of an attempt: the
	// answer of a call, and for a stream its first chunk and every next
	// one, so a long stream that keeps coming is never cut. An attempt
	// that waits longer is cancelled and fails with a retryable TIMEOUT
	// error (retried while nothing was yielded). Zero means
	// DefaultTimeout; a negative value means no bound beyond the caller's
	// context.
	Timeout time.Duration
	// Sleep waits for d or until ctx is done. Nil means a real timer; tests
	// inject a fake to observe waits without sleeping.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a random duration in [0, max). Nil means math/rand.
	Jitter func(max time.Duration) time.Duration
}

func (p *Policy) maxAttempts() int {
	if p == nil || p.MaxAttempts <= 0 {
		return DefaultMaxAttempts
	}
	return p.MaxAttempts
}

// AttemptTimeout returns the per-attempt timeout in force: Timeout,
// DefaultTimeout if it is zero, or 0 (none) if it is negative.
func (p *Policy) AttemptTimeout() time.Duration {
	switch {
	case p == nil || p.Timeout == 0:
		return DefaultTimeout
	case p.Timeout < 0:
		return 0
	}
	return p.Timeout
}

func (p *Policy) baseDelay() time.Duration {
	if p == nil || p.BaseDelay <= 0 {
		return DefaultBaseDelay
	}
	return p.BaseDelay
}

func (p *Policy) maxDelay() time.Duration {
	if p == nil || p.MaxDelay <= 0 {
		return DefaultMaxDelay
	}
	return p.MaxDelay
}

// Backoff returns the wait before attempt n+1 after attempt n (n >= 1)
// failed without a server-requested delay.
func (p *Policy) Backoff(n int) time.Duration {
	ceiling := p.maxDelay()
	d := p.baseDelay()
	for i := 1; i < n && d < ceiling; i++ {
		d *= 2
	}
	d = min(d, ceiling)
	if p != nil && p.Jitter != nil {
		return p.Jitter(d)
	}
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

func (p *Policy) sleep(ctx context.Context, d time.Duration) error {
	if p != nil && p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ExhaustedError reports that every attempt failed with a retryable error.
// It wraps the last error, normally a *model.Error.
type ExhaustedError struct {
	// Attempts is the number of attempts made.
	Attempts int
	// Err is the error of the last attempt.
	Err error
	// Reason says why no further attempt was made when attempts remained
	// (the server asked for a longer wait than the policy allows, or the
	// wait would outlive the caller's deadline); empty when they ran out.
	Reason string
}

// Error implements the error interface.
func (e *ExhaustedError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("giving up after %d attempts (%s): %v", e.Attempts, e.Reason, e.Err)
	}
	return fmt.Sprintf("giving up after %d attempts: %v", e.Attempts, e.Err)
}

// Unwrap returns the last attempt's error.
func (e *ExhaustedError) Unwrap() error { return e.Err }

type delayedError struct {
	err   error
	delay time.Duration
}

func (e *delayedError) Error() string { return e.err.Error() }
func (e *delayedError) Unwrap() error { return e.err }

// WithDelay attaches a server-requested wait (Retry-After) to err. A
// non-positive d returns err unchanged.
func WithDelay(err error, d time.Duration) error {
	if err == nil || d <= 0 {
		return err
	}
	return &delayedError{err: err, delay: d}
}

// Delay returns the server-requested wait attached to err by [WithDelay].
func Delay(err error) (time.Duration, bool) {
	var de *delayedError
	if errors.As(err, &de) {
		return de.delay, true
	}
	return 0, false
}

// RetryableStatus reports whether an HTTP status is worth retrying: 408,
// 429 and every 5xx (529 included).
func RetryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500 && code <= 599
}

// ParseRetryAfter reads a Retry-After header value: delay-seconds (possibly
// fractional, as some APIs send) or an HTTP date, relative to now.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		return max(d, 0), true
	}
	return 0, false
}

// HeaderDelay returns the wait requested by a response's Retry-After or
// retry-after-ms header, or 0.
func HeaderDelay(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms >= 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	d, _ := ParseRetryAfter(h.Get("Retry-After"), now)
	return d
}

// TransportError converts a failure that happened below HTTP (dial, TLS,
// reset, timeout) into a *model.Error, retryable when the
// failure is transient. Context errors of the caller are returned as is.
func TransportError(provider string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	var me *model.Error
	if errors.As(err, &me) {
		return err
	}
	return &model.Error{Provider: provider, Code: "TRANSPORT", Message: err.Error(), Retryable: transient(err)}
}

func transient(err error) bool {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout(),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.ErrUnexpectedEOF), // a body cut short
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EPIPE):
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

func retryable(err error) bool {
	var me *model.Error
	return errors.As(err, &me) && me.Retryable
}

// Stream runs attempt under the policy. Each attempt gets its own context
// (bounded by Timeout). Responses are forwarded as they come; an error that
// arrives before the first response is retried when it is retryable and
// attempts remain. The returned iterator is single-use.
func (p *Policy) Stream(ctx context.Context, provider string, attempt func(ctx context.Context) iter.Seq2[*model.Response, error]) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		limit := p.maxAttempts()
		for n := 1; ; n++ {
			yielded, stopped, err := p.once(ctx, provider, attempt, yield)
			if stopped || err == nil {
				return
			}
			if ctxErr := ctx.Err(); ctxErr != nil {
				yield(nil, ctxErr)
				return
			}
			if yielded || !retryable(err) {
				yield(nil, err)
				return
			}
			if n >= limit {
				if limit > 1 {
					err = &ExhaustedError{Attempts: n, Err: err}
				}
				yield(nil, err)
				return
			}
			wait, asked := Delay(err)
			if asked && wait > p.maxDelay() {
				yield(nil, &ExhaustedError{Attempts: n, Err: err,
					Reason: fmt.Sprintf("the server asked to retry after %v, longer than the policy's MaxDelay of %v", wait, p.maxDelay())})
				return
			}
			if !asked {
				wait = p.Backoff(n)
			}
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
				// Waiting would outlive the caller: report the real failure
				// instead of a deadline error.
				yield(nil, &ExhaustedError{Attempts: n, Err: err,
					Reason: fmt.Sprintf("the next attempt, in %v, would come after the caller's deadline", wait)})
				return
			}
			if serr := p.sleep(ctx, wait); serr != nil {
				yield(nil, serr)
				return
			}
		}
	}
}

// once runs one attempt. It reports whether anything was yielded, whether
// the consumer stopped the iteration, and the attempt's error.
func (p *Policy) once(ctx context.Context, provider string, attempt func(context.Context) iter.Seq2[*model.Response, error], yield func(*model.Response, error) bool) (yielded, stopped bool, err error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timeout := p.AttemptTimeout()
	var timer *time.Timer
	if timeout > 0 {
		// The provider has timeout to produce each response; the time the
		// consumer spends on one is not counted.
		timer = time.AfterFunc(timeout, func() { cancel(errAttemptTimeout) })
		defer timer.Stop()
	}
	for resp, aerr := range attempt(actx) {
		if aerr != nil {
			if ctx.Err() == nil && errors.Is(context.Cause(actx), errAttemptTimeout) {
				// Our own per-attempt timer fired: a timeout, retryable
				// while nothing was yielded.
				aerr = &model.Error{Provider: provider, Code: "TIMEOUT", Message: "no response within " + timeout.String(), Retryable: true}
			}
			return yielded, false, aerr
		}
		yielded = true
		if timer != nil && !timer.Stop() {
			// The timer fired as the response arrived: the attempt's
			// context is already cancelled, and its next step fails.
			timer = nil
		}
		if !yield(resp, nil) {
			return true, true, nil
		}
		if timer != nil {
			timer.Reset(timeout)
		}
	}
	return yielded, false, nil
}

// errAttemptTimeout is the cause of an attempt's context cancelled by the
// policy's Timeout.
var errAttemptTimeout = errors.New("attempt timed out")
