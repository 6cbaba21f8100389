// Package compaction keeps long conversations within a model's reach by
// replacing old ranges of a session's history with summaries.
//
// [Plugin] returns a runner plugin that, after each invocation, may append a
// summary event: an event whose Actions.Compaction holds a time range and
// the summary content. Nothing is removed from the session; [event.ModelView]
// shows the summary to models in place of the events whose timestamps lie in
// the range, and when two ranges overlap the newer summary wins.
//
// # Triggers
//
// Sliding window (Interval N, Overlap O): once N invocations have happened
// since the last compaction, the invocations from O before the first of them
// through the latest are summarized. With N=2 and O=1, the summary made after
// invocation 2 covers 1..2, the one after invocation 4 covers 2..4, and so
// on. When the new range overlaps an older summary, that summary is part of
// the summarizer's input, so the newer summary loses nothing the older one
// held.
//
// Token threshold (TokenThreshold T, RetainRecent K): when the prompt of the
// latest model call (the PromptTokenCount of the newest event that reports
// usage, made after the last compaction) exceeded T tokens, everything the
// model sees except its last K events is summarized, earlier summaries
// included.
//
// # Guarantees
//
//   - A function call is never compacted while it waits for its response
//     (from a long-running tool or a confirmation), nor are its interim
//     results: such calls split the history, and a range covers the
//     earliest part that is not summarized yet, so compaction goes on past
//     a call that stays pending. A call and its response are summarized
//     together.
//   - No event leaves the model's view unless it is in the input of the
//     summary that covers it: range bounds are moved, if need be, so that
//     events sharing a timestamp with the edge of a range stay visible.
//   - Events hidden by a rewind are never summarized, and compactions hidden
//     by a rewind do not count.
//
// A summary event is authored by the agent that spoke last in the session
// (the root agent if none did), so it does not change which agent answers
// the next message, and belongs to the invocation that triggered it.
package compaction

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/session"
)

// ErrNoSummarizer reports that no summarizer is configured and the root
// agent has no model to summarize with.
var ErrNoSummarizer = errors.New("compaction: no summarizer: set Config.Summarizer or use a root agent with a model")

// Summarizer summarizes a range of a session's events.
type Summarizer interface {
	// Summarize returns the summary of events, oldest first. Earlier
	// summaries in the range come first, as their compaction events (the
	// summary is in Actions.Compaction.Content).
	Summarize(ctx context.Context, events []*event.Event) (*genai.Content, error)
}

// SummarizerFunc adapts a function to [Summarizer].
type SummarizerFunc func(ctx context.Context, events []*event.Event) (*genai.Content, error)

// Summarize implements [Summarizer].
func (f SummarizerFunc) Summarize(ctx context.Context, events []*event.Event) (*genai.Content, error) {
	return f(ctx, events)
}

// Config configures compaction. A trigger whose settings are zero is off;
// with both off the plugin does nothing.
type Config struct {
	// Summarizer writes the summaries. If nil, the root agent's model is
	// used through [LLMSummarizer] when the root agent has one (as an
	// llmagent does, with its Model method); otherwise every compaction
	// fails with ErrNoSummarizer, reported through OnError.
	Summarizer Summarizer
	// Interval is the number of new invocations that triggers a sliding
	// window compaction (0: off).
	Interval int
	// Overlap is the number of already compacted invocations a sliding
	// window summary covers again, for continuity.
	Overlap int
	// TokenThreshold is the prompt size, in tokens, above which everything
	// but the RetainRecent latest events is compacted (0: off).
	TokenThreshold int
	// RetainRecent is the number of latest events the token threshold
	// trigger keeps out of the summary.
	RetainRecent int
	// OnError receives compaction failures; they never fail the invocation.
	// If nil, they are logged with slog.Default at warning level.
	OnError func(ctx context.Context, err error)
}

// Plugin returns a runner plugin that compacts a session's history after
// each invocation whose agents finished without error and without its
// context being cancelled; the runner commits the summary event. It is
// safe for concurrent use; the runner serializes invocations of a session,
// so two compactions of one session never race.
func Plugin(cfg Config) *plugin.Plugin {
	cfg.Overlap = max(cfg.Overlap, 0)
	cfg.RetainRecent = max(cfg.RetainRecent, 0)
	return &plugin.Plugin{
		Name: "compaction",
		AfterAgents: func(ctx context.Context, inv *agent.Invocation) (*event.Event, error) {
			if ctx.Err() != nil {
				return nil, nil // the invocation was cancelled: leave the log as it is
			}
			ev, err := compact(ctx, cfg, inv)
			if err != nil {
				report(ctx, cfg, inv, err)
			}
			return ev, nil
		},
	}
}

func report(ctx context.Context, cfg Config, inv *agent.Invocation, err error) {
	if cfg.OnError != nil {
		cfg.OnError(ctx, err)
		return
	}
	slog.WarnContext(ctx, "compaction failed", "session", inv.Session().ID(), "invocation", inv.ID(), "error", err)
}

// modelOwner is an agent with a model, such as an llmagent.
type modelOwner interface{ Model() model.LLM }

// compact runs the enabled triggers, sliding window first. A token
// threshold compaction only follows a model call made after the last
// compaction, so a sliding window summary just made is not summarized again.
func compact(ctx context.Context, cfg Config, inv *agent.Invocation) (*event.Event, error) {
	if cfg.Interval <= 0 && cfg.TokenThreshold <= 0 {
		return nil, nil
	}
	sess := inv.Session()
	var r *summaryRange
	if cfg.Interval > 0 {
		r = slidingRange(sess, cfg.Interval, cfg.Overlap)
	}
	if r == nil && cfg.TokenThreshold > 0 {
		r = tokenRange(sess, cfg.TokenThreshold, cfg.RetainRecent)
	}
	if r == nil {
		return nil, nil
	}
	var root agent.Agent
	if t := inv.Tree(); t != nil {
		root = t.Root()
	}
	sum := cfg.Summarizer
	if sum == nil {
		owner, ok := root.(modelOwner)
		if !ok || owner.Model() == nil {
			return nil, ErrNoSummarizer
		}
		sum = LLMSummarizer(owner.Model(), "")
	}
	content, err := sum.Summarize(ctx, r.input)
	if err != nil {
		return nil, fmt.Errorf("compaction: summarize: %w", err)
	}
	if content == nil || len(content.Parts) == 0 {
		return nil, errors.New("compaction: summarize: empty summary")
	}
	content = event.CloneContent(content)
	content.Role = genai.RoleModel
	rootName := ""
	if root != nil {
		rootName = root.Name()
	}
	ev := event.New(inv.ID(), lastSpeaker(sess, rootName))
	ev.Actions.Compaction = &event.Compaction{Start: r.start, End: r.end, Content: content}
	return ev, nil
}

// lastSpeaker returns the author of the newest agent event, or root.
func lastSpeaker(sess *session.Session, root string) string {
	for i := sess.Len() - 1; i >= 0; i-- {
		if a := sess.At(i).Author; a != event.AuthorUser && a != "" {
			return a
		}
	}
	return root
}

// summaryRange is a range to compact and what to summarize for it.
type summaryRange struct {
	start, end time.Time
	input      []*event.Event
}

// tick is the timestamp resolution that survives the wire format; range
// bounds move by it to keep an edge event out of a range.
const tick = time.Microsecond
