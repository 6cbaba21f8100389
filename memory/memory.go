// Package memory gives agents long-term memory: knowledge gathered from past
// sessions that can be searched from any later session of the same user.
//
// [Service] owns the rules: which events of a session become memories (those
// with text), that adding a session again replaces what it added before,
// that adding some events of a session again updates their memories and
// leaves the rest of the session's, and that a search only ever sees the
// memories of one (app, user). Backends implement the narrow [Store]
// interface.
package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/session"
)

// ErrInvalid reports a malformed request, such as an empty user id.
var ErrInvalid = errors.New("invalid memory request")

// Entry is one remembered piece of a conversation.
type Entry struct {
	// ID identifies the entry (the id of the event it came from).
	ID string
	// SessionID is the session the entry came from.
	SessionID string
	// Author is the event's author.
	Author string
	// Timestamp is the event's time.
	Timestamp time.Time
	// Content is the remembered content.
	Content *genai.Content
}

// Text returns the entry's text.
func (e *Entry) Text() string { return model.Text(e.Content, " ") }

// Words returns the words of text in order, lower-cased (strings.ToLower),
// repeats included. A word is a maximal run of Unicode letters and digits
// (unicode.IsLetter, unicode.IsDigit); everything else separates words, so
// "alice@example.com" holds the words "alice", "example" and "com". It is
// the rule by which every store matches queries to entries: an entry
// matches a query word when the word is among the entry's words.
func Words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// Store is the storage driver behind a Service. Implementations must be
// safe for concurrent use. A session holds at most one entry per id; the
// entries of one call have distinct ids (the Service sees to it).
type Store interface {
	// Replace stores entries as the memories of one session of (app, user),
	// replacing whatever that session stored before, atomically.
	Replace(ctx context.Context, app, user, sessionID string, entries []Entry) error
	// Upsert stores entries as memories of one session of (app, user),
	// atomically: an entry replaces the session's entry with the same id,
	// and the session's other entries stay. Its cost depends on the number
	// of entries given, not on the number the session holds.
	Upsert(ctx context.Context, app, user, sessionID string, entries []Entry) error
	// Search returns up to limit entries of (app, user) that match query,
	// best match first. Matching is word-based and case-insensitive: an
	// entry matches when it contains at least one of the query's Words.
	Search(ctx context.Context, app, user, query string, limit int) ([]Entry, error)
	// Close releases the store's resources.
	Close() error
}

// Service manages memories over a Store. It is safe for concurrent use.
type Service struct{ store Store }

// NewService returns a service over store.
func NewService(store Store) *Service { return &Service{store: store} }

// Close closes the store.
func (s *Service) Close() error { return s.store.Close() }

// AddSession remembers the text-bearing events of a session. Adding the same
// session again replaces its earlier memories. It reads every event of the
// session; [Service.AddEvents] adds only some.
func (s *Service) AddSession(ctx context.Context, sess *session.Session) error {
	if sess == nil {
		return fmt.Errorf("%w: nil session", ErrInvalid)
	}
	if err := s.store.Replace(ctx, sess.AppName(), sess.UserID(), sess.ID(), entries(sess, sess.Events())); err != nil {
		return fmt.Errorf("memory: add session %s: %w", sess.ID(), err)
	}
	return nil
}

// AddEvents remembers the text-bearing events among events, which belong to
// sess, by the rule of AddSession. An event added again (here or by
// AddSession) is still one memory, updated; the memories of the session's
// other events stay. Its cost depends on len(events), not on the length of
// the session: adding each new event of a session once, as it comes,
// leaves the same memories as adding the whole session at the end.
func (s *Service) AddEvents(ctx context.Context, sess *session.Session, events []*event.Event) error {
	if sess == nil {
		return fmt.Errorf("%w: nil session", ErrInvalid)
	}
	es := entries(sess, events)
	if len(es) == 0 {
		return nil
	}
	if err := s.store.Upsert(ctx, sess.AppName(), sess.UserID(), sess.ID(), es); err != nil {
		return fmt.Errorf("memory: add events of session %s: %w", sess.ID(), err)
	}
	return nil
}

// entries returns the memories events of sess make: one per text-bearing
// event (see textOnly), in order, and one per event id (the last event with
// an id wins).
func entries(sess *session.Session, events []*event.Event) []Entry {
	var out []Entry
	var at map[string]int // index in out by entry id
	for _, e := range events {
		if e == nil {
			continue
		}
		c := textOnly(e)
		if c == nil {
			continue
		}
		en := Entry{ID: e.ID, SessionID: sess.ID(), Author: e.Author, Timestamp: e.Timestamp, Content: c}
		if at == nil {
			at = make(map[string]int, len(events))
		}
		if i, ok := at[e.ID]; ok {
			out[i] = en
			continue
		}
		at[e.ID] = len(out)
		out = append(out, en)
	}
	return out
}

func textOnly(e *event.Event) *genai.Content {
	if e.Content == nil || e.Partial {
		return nil
	}
	var parts []*genai.Part
	for _, p := range e.Content.Parts {
		if p != nil && p.Text != "" && !p.Thought {
			parts = append(parts, &genai.Part{Text: p.Text})
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return &genai.Content{Role: e.Content.Role, Parts: parts}
}

// SearchOptions tunes a search. The zero value is the default.
type SearchOptions struct {
	// Limit is the maximum number of entries (default 10).
	Limit int
}

// Search returns the memories of (app, user) that match query.
func (s *Service) Search(ctx context.Context, app, user, query string, opts *SearchOptions) ([]Entry, error) {
	if strings.TrimSpace(app) == "" || strings.TrimSpace(user) == "" {
		return nil, fmt.Errorf("%w: app name and user id are required", ErrInvalid)
	}
	limit := 10
	if opts != nil && opts.Limit > 0 {
		limit = opts.Limit
	}
	if strings.TrimSpace(query) == "" {
		return nil, nil
	}
	res, err := s.store.Search(ctx, app, user, query, limit)
	if err != nil {
		return nil, fmt.Errorf("memory: search: %w", err)
	}
	return res, nil
}
