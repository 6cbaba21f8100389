package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"testing"
	"time"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/retry"
)

type recorder struct{ waits []time.Duration }

func (r *recorder) policy(attempts int) *retry.Policy {
	return &retry.Policy{
		MaxAttempts: attempts,
		BaseDelay:   time.Second,
		MaxDelay:    5 * time.Second,
		Jitter:      func(max time.Duration) time.Duration { return max },
		Sleep: func(ctx context.Context, d time.Duration) error {
			r.waits = append(r.waits, d)
			return ctx.Err()
		},
	}
}

// script returns an attempt function that plays one outcome per attempt.
func script(outcomes ...error) (func(context.Context) iter.Seq2[*model.Response, error], *int) {
	n := 0
	return func(context.Context) iter.Seq2[*model.Response, error] {
		return func(yield func(*model.Response, error) bool) {
			i := n
			n++
			if i < len(outcomes) && outcomes[i] != nil {
				yield(nil, outcomes[i])
				return
			}
			yield(&model.Response{Partial: true}, nil)
			yield(&model.Response{}, nil)
		}
	}, &n
}

func status(code int) error {
	return &model.Error{Provider: "test", StatusCode: code, Retryable: retry.RetryableStatus(code)}
}

func TestBackoffIsExponentialAndCapped(t *testing.T) {
	var r recorder
	p := r.policy(1)
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i, w := range want {
		if got := p.Backoff(i + 1); got != w {
			t.Errorf("Backoff(%d) = %v, want %v", i+1, got, w)
		}
	}
	// Full jitter: the default draws from [0, ceiling).
	var q retry.Policy
	for range 100 {
		if d := q.Backoff(3); d < 0 || d >= 4*retry.DefaultBaseDelay {
			t.Fatalf("Backoff(3) = %v outside [0, %v)", d, 4*retry.DefaultBaseDelay)
		}
	}
}

func TestRetryableStatuses(t *testing.T) {
	for code, want := range map[int]bool{400: false, 401: false, 403: false, 404: false, 408: true, 429: true, 500: true, 502: true, 503: true, 529: true} {
		if got := retry.RetryableStatus(code); got != want {
			t.Errorf("RetryableStatus(%d) = %v", code, got)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"3":                             3 * time.Second,
		"0.5":                           500 * time.Millisecond,
		"Wed, 01 Jan 2025 00:00:10 GMT": 10 * time.Second,
		"Tue, 31 Dec 2024 00:00:10 GMT": 0,
	} {
		if got, ok := retry.ParseRetryAfter(in, now); !ok || got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	if _, ok := retry.ParseRetryAfter("soon", now); ok {
		t.Error("ParseRetryAfter accepted garbage")
	}
	h := http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}
	if got := retry.HeaderDelay(h, now); got != 250*time.Millisecond {
		t.Errorf("HeaderDelay = %v, want retry-after-ms to win", got)
	}
}

func TestStreamRetriesThenSucceeds(t *testing.T) {
	var r recorder
	attempt, n := script(status(503), retry.WithDelay(status(429), 3*time.Second), nil)
	var got []*model.Response
	for resp, err := range r.policy(4).Stream(t.Context(), "test", attempt) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp)
	}
	if *n != 3 || len(got) != 2 {
		t.Errorf("attempts = %d, responses = %d", *n, len(got))
	}
	if fmt.Sprint(r.waits) != "[1s 3s]" {
		t.Errorf("waits = %v, want [1s 3s]", r.waits)
	}
}

func TestStreamExhausted(t *testing.T) {
	var r recorder
	attempt, n := script(status(500), status(502), status(529))
	var err error
	for _, e := range r.policy(3).Stream(t.Context(), "test", attempt) {
		err = e
	}
	var ex *retry.ExhaustedError
	var me *model.Error
	if !errors.As(err, &ex) || ex.Attempts != 3 || !errors.As(err, &me) || me.StatusCode != 529 || *n != 3 {
		t.Errorf("err = %v after %d attempts", err, *n)
	}
}

func TestNonRetryableIsReturnedAsIs(t *testing.T) {
	var r recorder
	attempt, n := script(status(400))
	var err error
	for _, e := range r.policy(3).Stream(t.Context(), "test", attempt) {
		err = e
	}
	var ex *retry.ExhaustedError
	if errors.As(err, &ex) || *n != 1 || len(r.waits) != 0 {
		t.Errorf("err = %v, attempts = %d, waits = %v", err, *n, r.waits)
	}
}

func TestRetryAfterBeyondMaxDelayGivesUp(t *testing.T) {
	var r recorder
	attempt, n := script(retry.WithDelay(status(429), time.Hour))
	var err error
	for _, e := range r.policy(3).Stream(t.Context(), "test", attempt) {
		err = e
	}
	var ex *retry.ExhaustedError
	if !errors.As(err, &ex) || ex.Attempts != 1 || *n != 1 || len(r.waits) != 0 {
		t.Errorf("err = %v, attempts = %d, waits = %v", err, *n, r.waits)
	}
}

func TestNoRetryAfterFirstYield(t *testing.T) {
	var r recorder
	n := 0
	attempt := func(context.Context) iter.Seq2[*model.Response, error] {
		return func(yield func(*model.Response, error) bool) {
			n++
			if yield(&model.Response{Partial: true}, nil) {
				yield(nil, status(503))
			}
		}
	}
	var got int
	var err error
	for resp, e := range r.policy(4).Stream(t.Context(), "test", attempt) {
		if resp != nil {
			got++
		}
		err = e
	}
	if n != 1 || got != 1 || err == nil {
		t.Errorf("attempts = %d, responses = %d, err = %v", n, got, err)
	}
}

func TestContextCancelledDuringWait(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	p := &retry.Policy{MaxAttempts: 3, Sleep: func(ctx context.Context, _ time.Duration) error {
		cancel()
		return ctx.Err()
	}}
	attempt, n := script(status(503), status(503))
	var err error
	for _, e := range p.Stream(ctx, "test", attempt) {
		err = e
	}
	if !errors.Is(err, context.Canceled) || *n != 1 {
		t.Errorf("err = %v, attempts = %d", err, *n)
	}
}

func TestPerAttemptTimeoutIsRetried(t *testing.T) {
	var r recorder
	p := r.policy(2)
	p.Timeout = time.Millisecond
	n := 0
	attempt := func(ctx context.Context) iter.Seq2[*model.Response, error] {
		return func(yield func(*model.Response, error) bool) {
			n++
			if n == 1 {
				<-ctx.Done() // the first attempt hangs until its deadline
				yield(nil, ctx.Err())
				return
			}
			yield(&model.Response{}, nil)
		}
	}
	for _, err := range p.Stream(t.Context(), "test", attempt) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n != 2 {
		t.Errorf("attempts = %d, want 2", n)
	}
}

func TestTransportError(t *testing.T) {
	if err := retry.TransportError("x", context.Canceled); err != context.Canceled {
		t.Errorf("context.Canceled became %v", err)
	}
	var me *model.Error
	err := retry.TransportError("x", context.DeadlineExceeded)
	if !errors.As(err, &me) || !me.Retryable {
		t.Errorf("deadline = %v, want retryable", err)
	}
	err = retry.TransportError("x", errors.New("tls: bad certificate"))
	if !errors.As(err, &me) || me.Retryable {
		t.Errorf("tls failure = %v, want not retryable", err)
	}
}

func ExamplePolicy_Stream() {
	p := &retry.Policy{MaxAttempts: 3, BaseDelay: time.Millisecond}
	calls := 0
	attempt := func(context.Context) iter.Seq2[*model.Response, error] {
		return func(yield func(*model.Response, error) bool) {
			calls++
			if calls == 1 {
				yield(nil, &model.Error{Provider: "demo", StatusCode: 503, Retryable: true})
				return
			}
			yield(&model.Response{ModelVersion: "demo-1"}, nil)
		}
	}
	for resp, err := range p.Stream(context.Background(), "demo", attempt) {
		fmt.Println(resp.ModelVersion, err, "after", calls, "calls")
	}
	// Output: demo-1 <nil> after 2 calls
}

// TestDefaultTimeout: a policy without a Timeout still bounds each attempt,
// by DefaultTimeout; a negative Timeout removes the bound.
func TestDefaultTimeout(t *testing.T) {
	for _, tc := range []struct {
		p    *retry.Policy
		want time.Duration
	}{{nil, retry.DefaultTimeout}, {&retry.Policy{}, retry.DefaultTimeout}, {&retry.Policy{Timeout: time.Second}, time.Second}, {&retry.Policy{Timeout: -1}, 0}} {
		if got := tc.p.AttemptTimeout(); got != tc.want {
			t.Errorf("Timeout %v: attempt timeout %v, want %v", tc.p, got, tc.want)
		}
	}
}

// TestTimeoutIsPerResponse: a stream whose chunks keep coming is not cut
// by the timeout, however long it lasts in total; one that stalls after
// its first chunk fails with a TIMEOUT error, not retried.
func TestTimeoutIsPerResponse(t *testing.T) {
	var r recorder
	p := r.policy(3)
	p.Timeout = 100 * time.Millisecond
	stream := func(stallAfter int) func(ctx context.Context) iter.Seq2[*model.Response, error] {
		return func(ctx context.Context) iter.Seq2[*model.Response, error] {
			return func(yield func(*model.Response, error) bool) {
				for i := range 6 {
					if i == stallAfter {
						<-ctx.Done()
						yield(nil, ctx.Err())
						return
					}
					select {
					case <-time.After(50 * time.Millisecond):
					case <-ctx.Done():
						yield(nil, ctx.Err())
						return
					}
					if !yield(&model.Response{Partial: true}, nil) {
						return
					}
				}
			}
		}
	}
	n := 0
	for _, err := range p.Stream(t.Context(), "test", stream(-1)) {
		if err != nil {
			t.Fatalf("a steady 300ms stream failed: %v", err)
		}
		n++
	}
	if n != 6 {
		t.Errorf("%d chunks, want 6", n)
	}
	var last error
	for _, err := range p.Stream(t.Context(), "test", stream(1)) {
		last = err
	}
	var me *model.Error
	if !errors.As(last, &me) || me.Code != "TIMEOUT" {
		t.Errorf("stalled stream ended with %v, want a TIMEOUT error", last)
	}
}

// TestTruncatedBodyIsTransient: a body cut short is a transport failure
// worth retrying.
func TestTruncatedBodyIsTransient(t *testing.T) {
	var me *model.Error
	if err := retry.TransportError("x", fmt.Errorf("read: %w", io.ErrUnexpectedEOF)); !errors.As(err, &me) || !me.Retryable {
		t.Errorf("unexpected EOF = %v, want retryable", err)
	}
}
