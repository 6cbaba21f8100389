// Package runner drives agent invocations: it is the event loop of Loom.
//
// For each user message, [Runner.Run] loads the session, stores the message
// as a user event, chooses the agent to answer, and ranges over that agent's
// events. Every non-partial event is committed through the session service
// (state delta applied, artifact delta recorded, event appended) before it is
// forwarded to the caller and before the agent's yield returns, so the agent
// resumes seeing the committed state. Artifact versions saved for an event
// are part of its commit: those of an event that is not committed are
// deleted (see agent.PendingArtifacts). Partial (streaming) events are
// forwarded only. The runner is the only writer of agent events to a
// session.
//
// Invocations of one session are serialized within a runner: a second Run
// on a session waits until the first has finished (or its context is done).
// Runs on different sessions proceed concurrently. With a session store
// that several processes share (sqlsession), invocations of one session are
// serialized across processes too, by the session's lease.
package runner

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/session"
)

// Config configures a Runner.
type Config struct {
	// AppName names the application; sessions are scoped by it. Required.
	AppName string
	// Agent is the root agent. Required.
	Agent agent.Agent
	// Refresh, when set, is called at the start of every invocation (and
	// by Runner.Refresh) and may return a new root agent, which then
	// answers from this invocation on; nil keeps the current one, as does
	// an agent that does not form a valid tree. Invocations under way keep
	// the tree they started with. It lets an application's agents change
	// without a restart, as when their config files are edited.
	Refresh func(ctx context.Context) agent.Agent
	// Sessions stores sessions. Required.
	Sessions *session.Service
	// Artifacts and Memory are optional services made available to agents,
	// callbacks and tools.
	Artifacts *artifact.Service
	Memory    *memory.Service
	// AutoCreateSession creates a missing session on Run instead of failing
	// with session.ErrNotFound.
	AutoCreateSession bool
	// Plugins are global hooks applied to every invocation, in order,
	// before the agents' own callbacks.
	Plugins []*plugin.Plugin
	// SessionCacheSize is the number of idle live sessions kept between
	// invocations so that a new turn only loads what changed (default 1024;
	// negative disables the cache).
	SessionCacheSize int
	// Resumable makes the application resumable, as ADK's
	// ResumabilityConfig(is_resumable=True) does: workflow agents
	// (sequential, parallel, loop) record checkpoint events (agent state,
	// end of agent), and an invocation that runs them can continue from
	// the middle, after a pause, a crash (Resume) or on Temporal. The zero
	// value is ADK's default: no checkpoint event is written, an answer to
	// a paused call continues only the agent that asked it (the rest of an
	// enclosing workflow does not run), and Resume, or an explicit
	// RunOptions.InvocationID, of an invocation whose agents need
	// checkpoints fails with ErrInvalid rather than run anything again.
	// Invocations of agents that need no checkpoint (LLM agents and their
	// transfers) resume the same either way. See agent.CheckpointResumer.
	Resumable bool
	// SessionCacheBytes bounds the estimated memory (session.Session.Size)
	// of the idle live sessions kept, with what is kept on their behalf,
	// such as their agents' model histories (default
	// DefaultSessionCacheBytes; negative disables the cache). The least
	// recently used are dropped first; a session larger than the bound is
	// not kept, and its next turn loads it from the store. Between
	// invocations a kept session holds only its latest events decoded
	// (session.Session.Trim).
	SessionCacheBytes int64
	// CallKey, when set, authenticates the function calls the agents
	// store: before it commits an event the agents yield, the runner
	// records an HMAC of its calls (ids, names and arguments, for this
	// application and user) in the event's storage-only metadata
	// (event.MetadataCallMAC), and a resumed agent runs a stored call
	// only if its event's code matches (agent.Invocation.CheckStoredCalls). A
	// session log edited outside the runtime then cannot make a tool run
	// with arguments the model never gave. Nothing of it reaches the
	// wire. Calls stored without the key (before it was set, or by another
	// runtime) are refused when an invocation resumes them.
	CallKey *event.CallKey
	// SessionTTL is the app's session retention: when positive,
	// ExpireSessions deletes the sessions unused (no event, counting from
	// creation) for longer, with their events, session state and
	// artifacts. Zero, the default, keeps sessions until they are deleted.
	SessionTTL time.Duration
	// Credentials, when set, keeps the credentials users grant to the
	// app's tools (OAuth2 tokens, see credential/oauth), per user and
	// sealed under its key, so that a user signs in once rather than in
	// every session. Nil keeps none: a tool asks the client each time.
	Credentials *credential.Service
}

// DefaultSessionCacheBytes is the default of Config.SessionCacheBytes.
const DefaultSessionCacheBytes = 256 << 20

// RunOptions are the per-run settings. The zero value is the default.
type RunOptions struct {
	// Streaming asks models to stream: partial events are yielded as text
	// arrives, then one aggregated event.
	Streaming bool
	// StateDelta is applied with the user message event.
	StateDelta map[string]any
	// MaxLLMCalls limits model calls in the invocation (0: the default of
	// agent.DefaultMaxLLMCalls; negative: no limit). The calls a resumed
	// invocation made before count too: after a pause, a crash or on
	// Temporal, exceeding the limit ends it with agent.ErrLLMCallLimit as in
	// one uninterrupted run.
	MaxLLMCalls int
	// InvocationID, when set, resumes that invocation of the session with
	// the new message instead of starting a new one (see resume.go). A
	// message answering a paused call resumes the call's invocation without
	// it.
	InvocationID string
	// MessageID, when set, is the id of the event that stores the message
	// (default: a new one). A session holds an event id once: a run whose
	// message id the session already holds stores nothing and fails with
	// an error wrapping session.ErrAlreadyExists, so that an executor that
	// retries a run after a failure it cannot tell from a commit (a durable
	// one) stores the message once and finds it by its id.
	MessageID string
}

// ErrInvalid reports a malformed run request.
var ErrInvalid = errors.New("runner: invalid request")

// Runner runs the agents of one application. It is safe for concurrent use.
type Runner struct {
	cfg       Config
	tree      atomic.Pointer[agent.Tree] // the current tree (Config.Refresh)
	refreshMu sync.Mutex                 // serializes Refresh
	callbacks agent.Callbacks            // merged from the plugins

	mu        sync.Mutex
	live      map[session.Key]*liveSession
	idle      idleList // the live sessions with refs == 0, most recent first
	idleBytes int64    // sum of the idle sessions' sizes
	limit     int      // of idle sessions
	maxBytes  int64    // of idleBytes
}

// liveSession is a session copy kept across invocations, with the lock that
// serializes invocations on it.
type liveSession struct {
	key  session.Key
	sem  chan struct{}
	sess *session.Session // nil until loaded
	refs int
	// prev and next link the session in the idle list; idle says it is
	// in it.
	prev, next *liveSession
	idle       bool
	size       int64 // sess.Size() when it became idle
	// forgotten says that the session was deleted while an invocation
	// held it: the last to let go drops it rather than keep it idle.
	forgotten bool
	// Guarded by sem: began is sess.Len() when the invocation under way
	// began; trimmed is the number of events sess's last Trim left
	// encoded, as far as the runner knows.
	began, trimmed int
}

// Between invocations, a live session keeps decoded the events of its last
// invocation, and at least its latest idleDecoded, and the older ones
// encoded (session.Session.Trim), once at least trimBatch events can go:
// what the next turn reads is those events (agents bring their model
// histories up to date with what was added since they last ran), and an
// agent's model history is kept apart. Trimming in batches encodes a batch
// into one buffer.
const (
	idleDecoded = 8
	trimBatch   = 64
)

// New returns a runner.
func New(cfg Config) (*Runner, error) {
	if cfg.AppName == "" {
		return nil, fmt.Errorf("%w: app name is required", ErrInvalid)
	}
	if cfg.Sessions == nil {
		return nil, fmt.Errorf("%w: session service is required", ErrInvalid)
	}
	tree, err := agent.NewTree(cfg.Agent)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	limit := cfg.SessionCacheSize
	if limit == 0 {
		limit = 1024
	}
	maxBytes := cfg.SessionCacheBytes
	if maxBytes == 0 {
		maxBytes = DefaultSessionCacheBytes
	}
	if limit < 0 || maxBytes < 0 {
		limit, maxBytes = 0, 0
	}
	r := &Runner{cfg: cfg, callbacks: plugin.Merge(cfg.Plugins), live: map[session.Key]*liveSession{},
		limit: limit, maxBytes: maxBytes}
	r.tree.Store(tree)
	return r, nil
}

// Refresh asks Config.Refresh for the current root agent and returns the
// tree that answers from now on. Without Config.Refresh it returns the
// tree of Config.Agent.
func (r *Runner) Refresh(ctx context.Context) *agent.Tree {
	if r.cfg.Refresh == nil {
		return r.tree.Load()
	}
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	cur := r.tree.Load()
	a := r.cfg.Refresh(ctx)
	if a == nil || a == cur.Root() {
		return cur
	}
	t, err := agent.NewTree(a)
	if err != nil {
		return cur
	}
	r.tree.Store(t)
	return t
}

// CacheUsage reports the idle live sessions the runner keeps and their
// estimated memory in bytes, which stays within Config.SessionCacheBytes.
func (r *Runner) CacheUsage() (sessions int, bytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.idle.n, r.idleBytes
}

// AppName returns the application name.
func (r *Runner) AppName() string { return r.cfg.AppName }

// SessionTTL returns the application's session retention
// (Config.SessionTTL); zero when sessions do not expire.
func (r *Runner) SessionTTL() time.Duration { return r.cfg.SessionTTL }

// Resumable reports whether the application is resumable
// (Config.Resumable).
func (r *Runner) Resumable() bool { return r.cfg.Resumable }

// Agent returns the root agent (the current one, see Config.Refresh).
func (r *Runner) Agent() agent.Agent { return r.tree.Load().Root() }

// Tree returns the indexed agent tree (the current one, see
// Config.Refresh).
func (r *Runner) Tree() *agent.Tree { return r.tree.Load() }

// Sessions returns the session service.
func (r *Runner) Sessions() *session.Service { return r.cfg.Sessions }

// Artifacts returns the artifact service, or nil.
func (r *Runner) Artifacts() *artifact.Service { return r.cfg.Artifacts }

// Memory returns the memory service, or nil.
func (r *Runner) Memory() *memory.Service { return r.cfg.Memory }

// Run runs one invocation: msg from userID in session sessionID. It yields
// the agents' events (not the user message) as they are committed, and
// partial events as they stream. The events are the committed ones, which
// the runner's copy of the session holds and later model calls are built
// from: read them, and change a copy (event.Event.Clone). The iterator is
// single-use; breaking out of the loop or cancelling ctx stops the
// invocation. On error it yields a non-nil error once and stops. opts may
// be nil.
func (r *Runner) Run(ctx context.Context, userID, sessionID string, msg *genai.Content, opts *RunOptions) iter.Seq2[*event.Event, error] {
	if opts == nil {
		opts = &RunOptions{}
	}
	return func(yield func(*event.Event, error) bool) {
		if err := checkMessage(msg); err != nil {
			yield(nil, err)
			return
		}
		tree := r.Refresh(ctx)
		err := r.withSession(ctx, userID, sessionID, true, func(sess *session.Session) error {
			res, err := r.resumption(tree, sess, msg, opts.InvocationID) // resume.go
			if err != nil {
				return err
			}
			r.invoke(ctx, tree, sess, msg, opts, res, yield)
			return nil
		})
		if err != nil {
			yield(nil, err)
		}
	}
}

// withSession runs fn on the live session of (userID, sessionID) while
// holding the session's invocation lock and, for a store that processes
// share, its lease (session.Service.Lease): invocations on other replicas
// wait for this one instead of failing with session.ErrStale. Both are
// taken before anything is stored and released on every way out, panics
// included; the live session is refreshed under them, so that the
// invocation sees what other replicas appended. A missing session is
// created only when create is set and the runner auto-creates sessions.
func (r *Runner) withSession(ctx context.Context, userID, sessionID string, create bool, fn func(*session.Session) error) error {
	key := session.Key{AppName: r.cfg.AppName, UserID: userID, SessionID: sessionID}
	ls, err := r.acquire(ctx, key)
	if err != nil {
		return err
	}
	defer r.release(ls)
	unlease, err := r.cfg.Sessions.Lease(ctx, key)
	if err != nil {
		return fmt.Errorf("runner: waiting for session %s: %w", sessionID, err)
	}
	defer unlease()
	sess, err := r.load(ctx, ls, create && r.cfg.AutoCreateSession)
	if err != nil {
		return err
	}
	return fn(sess)
}

// invoke runs one invocation: it stores the user message, chooses the
// agent, and drives the event loop. res, when not nil, resumes an
// invocation (resume.go); msg is nil when resuming without a message.
// Its context also ends when the session is cancelled from another
// process (session.Service.Cancel), which aborts it (abort.go).
func (r *Runner) invoke(ctx context.Context, tree *agent.Tree, sess *session.Session, msg *genai.Content, opts *RunOptions, res *resumption, yield func(*event.Event, error) bool) {
	ctx, stop, err := r.cfg.Sessions.WatchCancel(ctx, sess.Key())
	if err != nil {
		yield(nil, fmt.Errorf("runner: %w", err))
		return
	}
	defer stop()
	var creds map[string]map[string]any
	if msg != nil {
		// The ledger decides which answers are credentials, kept out of
		// the log and plugins' sight, in memory for the tools that asked.
		msg, creds = agent.TakeCredentials(res.pendingCalls(), msg)
	}
	cfg := agent.InvocationConfig{
		ID:                res.invocationID(),
		Tree:              tree,
		Session:           sess,
		Artifacts:         r.cfg.Artifacts,
		Memory:            r.cfg.Memory,
		UserContent:       msg,
		RunConfig:         agent.RunConfig{Streaming: opts.Streaming, MaxLLMCalls: opts.MaxLLMCalls},
		LLMCalls:          res.priorLLMCalls(),
		Resumable:         r.cfg.Resumable,
		Callbacks:         r.callbacks,
		Credentials:       creds,
		CredentialService: r.cfg.Credentials,
		// Shared by every invocation value built from cfg.
		PendingArtifacts: &agent.PendingArtifacts{},
		CallKey:          r.cfg.CallKey,
	}
	if msg == nil {
		cfg.UserContent = res.userContent
	}
	pending := cfg.PendingArtifacts
	// However the invocation ends, versions saved for events it did not
	// commit go, then the plugins' AfterRun hooks run. Best effort: a
	// failure leaves versions no event records, as a crash would.
	var inv *agent.Invocation
	defer func() {
		_ = r.discardArtifacts(ctx, pending)
		r.afterRun(ctx, inv)
	}()
	inv = agent.NewInvocation(cfg)
	if msg != nil {
		if inv, err = r.storeUserMessage(ctx, inv, cfg, opts, res); err != nil {
			yield(nil, err)
			return
		}
	}

	var ag agent.Agent
	var agInv *agent.Invocation
	if res != nil {
		ag, agInv = res.start(inv) // the agent that continues, in resume mode
	} else {
		ag = selectAgent(tree, sess)
		agInv = inv.For(ag)
	}
	events := ag.Run(ctx, agInv)
	early, err := r.beforeRun(ctx, agInv, pending)
	reading := true
	if err == nil {
		if early != nil {
			events = func(y func(*event.Event, error) bool) { y(early, nil) }
		}
		if reading, err = r.loop(ctx, inv, pending, events, yield); err == nil && reading {
			err = r.afterAgents(ctx, inv, pending)
		}
	}
	if ctx.Err() != nil && !errors.Is(context.Cause(ctx), ErrDetached) {
		reading = r.abort(ctx, inv, pending, reading, yield) // abort.go
	}
	if err != nil && reading {
		yield(nil, err)
	}
}

// storeUserMessage lets the plugins see (and replace) the user message,
// then commits it with the request's state delta and what the plugins
// staged. inv is the invocation built from cfg. It returns the invocation,
// which carries the message as stored.
func (r *Runner) storeUserMessage(ctx context.Context, inv *agent.Invocation, cfg agent.InvocationConfig, opts *RunOptions, res *resumption) (*agent.Invocation, error) {
	var cc *agent.CallbackContext // made for the first plugin that sees the message
	for _, p := range r.cfg.Plugins {
		if p.OnUserMessage == nil {
			continue
		}
		if cc == nil {
			cc = agent.NewCallbackContext(inv)
		}
		c, err := p.OnUserMessage(ctx, cc, cfg.UserContent)
		if err != nil {
			return nil, fmt.Errorf("runner: plugin %s: on user message: %w", p.Name, err)
		}
		if c != nil {
			cfg.UserContent = c
			inv = agent.NewInvocation(cfg)
			break
		}
	}
	user := event.New(inv.ID(), event.AuthorUser)
	if opts.MessageID != "" {
		user.ID = opts.MessageID
	}
	user.Branch = res.callBranch() // an answer joins the branch of its call
	user.Content = event.CloneContent(inv.UserContent())
	if user.Content.Role == "" {
		user.Content.Role = genai.RoleUser
	}
	user.Actions = event.Actions{StateDelta: event.CloneMap(opts.StateDelta)}
	if cc != nil {
		staged := cc.TakeActions() // the plugins' writes win over the request's delta
		user.Actions.Merge(&staged)
	}
	if err := r.commit(ctx, inv.Session(), user, cfg.PendingArtifacts); err != nil {
		return nil, fmt.Errorf("runner: store user message: %w", err)
	}
	return inv, nil
}

// loop is the event loop: it commits each complete event the agents yield
// before passing it on (and before the agent's yield returns), and passes
// partial events on uncommitted. It returns the error that ended the
// agents, if any, and whether the caller still reads.
func (r *Runner) loop(ctx context.Context, inv *agent.Invocation, pending *agent.PendingArtifacts, events iter.Seq2[*event.Event, error], yield func(*event.Event, error) bool) (reading bool, err error) {
	for ev, err := range events {
		if err != nil {
			return true, err
		}
		if ev == nil {
			continue
		}
		if ev.InvocationID == "" {
			ev.InvocationID = inv.ID()
		}
		if !ev.Partial {
			if err := r.sign(inv, ev); err != nil {
				return true, err
			}
			if err := r.commit(ctx, inv.Session(), ev, pending); err != nil {
				return true, fmt.Errorf("runner: commit event: %w", err)
			}
			if ev, err = r.onEvent(ctx, inv, ev); err != nil {
				return true, err
			}
		}
		if !yield(ev, nil) {
			return false, nil
		}
	}
	return true, nil
}

// sign authenticates the calls of ev, an event the agents yielded, when
// the runner has a call key (Config.CallKey). Only the agents' events are
// signed: what a client supplies never is.
func (r *Runner) sign(inv *agent.Invocation, ev *event.Event) error {
	if r.cfg.CallKey == nil {
		return nil
	}
	sess := inv.Session()
	if err := r.cfg.CallKey.Sign(ev, sess.AppName(), sess.UserID()); err != nil {
		return fmt.Errorf("runner: sign calls: %w", err)
	}
	return nil
}

// afterAgents commits the events the plugins' AfterAgents hooks return once
// the agents have finished. They are not sent to the caller.
func (r *Runner) afterAgents(ctx context.Context, inv *agent.Invocation, pending *agent.PendingArtifacts) error {
	for _, p := range r.cfg.Plugins {
		if p.AfterAgents == nil {
			continue
		}
		ev, err := p.AfterAgents(ctx, inv)
		if err == nil && ev != nil {
			if ev.InvocationID == "" {
				ev.InvocationID = inv.ID()
			}
			err = r.commit(ctx, inv.Session(), ev, pending)
		}
		if err != nil {
			return fmt.Errorf("runner: plugin %s: after agents: %w", p.Name, err)
		}
	}
	return nil
}

// commit appends ev to the session: every event the runner writes goes
// through here. Artifact versions are part of the commit: the versions
// saved for ev (and recorded in its ArtifactDelta) were stored when the
// tool or callback saved them, and they stay only if ev is committed. The
// session service changes nothing when AppendEvent fails, so on failure no
// event records the versions still pending, and they are deleted before
// the error is returned; nothing more is committed in that invocation.
func (r *Runner) commit(ctx context.Context, sess *session.Session, ev *event.Event, pending *agent.PendingArtifacts) error {
	if err := r.cfg.Sessions.AppendEvent(ctx, sess, ev); err != nil {
		if derr := r.discardArtifacts(ctx, pending); derr != nil {
			return errors.Join(err, fmt.Errorf("runner: remove uncommitted artifact versions: %w", derr))
		}
		return err
	}
	pending.Committed(sess.Key(), ev.Actions.ArtifactDelta)
	return nil
}

// discardArtifacts deletes the pending artifact versions no committed event
// covers. It runs even when ctx is done, which is often why a commit failed.
func (r *Runner) discardArtifacts(ctx context.Context, pending *agent.PendingArtifacts) error {
	return pending.Discard(ctx, r.cfg.Artifacts)
}

// beforeRun runs the plugins' before-run hooks. It returns an event to
// commit instead of running the agents, or nil.
func (r *Runner) beforeRun(ctx context.Context, inv *agent.Invocation, pending *agent.PendingArtifacts) (*event.Event, error) {
	var cc *agent.CallbackContext // made for the first plugin with the hook
	for _, p := range r.cfg.Plugins {
		if p.BeforeRun == nil {
			continue
		}
		if cc == nil {
			cc = agent.NewCallbackContext(inv)
		}
		c, err := p.BeforeRun(ctx, cc)
		if err != nil {
			return nil, fmt.Errorf("runner: plugin %s: before run: %w", p.Name, err)
		}
		if c != nil {
			ev := cc.Event()
			ev.Content = c
			return ev, nil
		}
	}
	if cc != nil && cc.HasActions() {
		// Staged state without an early answer: commit it before the agents run.
		if err := r.commit(ctx, inv.Session(), cc.Event(), pending); err != nil {
			return nil, fmt.Errorf("runner: commit before-run state: %w", err)
		}
	}
	return nil, nil
}

// onEvent runs the plugins' event hooks on a committed event and returns
// the event to forward.
func (r *Runner) onEvent(ctx context.Context, inv *agent.Invocation, ev *event.Event) (*event.Event, error) {
	for _, p := range r.cfg.Plugins {
		if p.OnEvent == nil {
			continue
		}
		out, err := p.OnEvent(ctx, inv, ev)
		if err != nil {
			return nil, fmt.Errorf("runner: plugin %s: on event: %w", p.Name, err)
		}
		if out != nil {
			return out, nil
		}
	}
	return ev, nil
}

func (r *Runner) afterRun(ctx context.Context, inv *agent.Invocation) {
	for _, p := range r.cfg.Plugins {
		if p.AfterRun != nil {
			p.AfterRun(ctx, inv)
		}
	}
}

// RunSync runs one invocation to completion and returns its events.
func (r *Runner) RunSync(ctx context.Context, userID, sessionID string, msg *genai.Content, opts *RunOptions) ([]*event.Event, error) {
	var out []*event.Event
	for ev, err := range r.Run(ctx, userID, sessionID, msg, opts) {
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// selectAgent chooses the agent that answers a new user message (one that
// answers no paused call: those resume their invocation, see resume.go):
// the last agent that spoke (ignoring what a rewind took back), if it may
// keep the conversation; else the root.
func selectAgent(tree *agent.Tree, sess *session.Session) agent.Agent {
	root := tree.Root()
	for _, ev := range event.Visible(sess) {
		if ev.Author == event.AuthorUser || event.IsAbort(ev) {
			continue // an abort event's author did not speak last
		}
		if ev.Author == root.Name() {
			return root
		}
		a := tree.Find(ev.Author)
		if a == nil {
			continue
		}
		if tree.Transferable(a.Name()) {
			return a
		}
		return root
	}
	return root
}

// acquire takes the invocation lock of a session.
func (r *Runner) acquire(ctx context.Context, key session.Key) (*liveSession, error) {
	r.mu.Lock()
	ls := r.live[key]
	if ls == nil {
		ls = &liveSession{key: key, sem: make(chan struct{}, 1)}
		r.live[key] = ls
	}
	ls.refs++
	if ls.idle {
		r.idle.remove(ls)
		r.idleBytes -= ls.size
	}
	r.mu.Unlock()
	select {
	case ls.sem <- struct{}{}:
		return ls, nil
	case <-ctx.Done():
		r.unref(ls)
		return nil, fmt.Errorf("runner: waiting for session %s: %w", key.SessionID, ctx.Err())
	}
}

func (r *Runner) release(ls *liveSession) {
	if ls.sess != nil {
		n := ls.sess.Len()
		if keep := max(idleDecoded, n-ls.began); n-keep >= ls.trimmed+trimBatch {
			ls.sess.Trim(keep)
			ls.trimmed = n - keep
		}
	}
	<-ls.sem
	r.unref(ls)
}

func (r *Runner) unref(ls *liveSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ls.refs--
	if ls.refs > 0 {
		return
	}
	if ls.sess == nil || r.limit == 0 || ls.forgotten {
		delete(r.live, ls.key)
		return
	}
	// No invocation holds the session: its size is stable until the next.
	ls.size = ls.sess.Size()
	if ls.size > r.maxBytes {
		delete(r.live, ls.key)
		return
	}
	r.idle.pushFront(ls)
	r.idleBytes += ls.size
	for r.idle.n > r.limit || r.idleBytes > r.maxBytes {
		old := r.idle.tail
		r.idle.remove(old)
		r.idleBytes -= old.size
		delete(r.live, old.key)
	}
}

// forget drops the live session of key, which was deleted, from the
// cache: at once if it is idle, else when the last invocation holding it
// lets go, so that its memory goes with it and not when newer sessions
// push it out.
func (r *Runner) forget(key session.Key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ls := r.live[key]
	switch {
	case ls == nil:
	case ls.idle:
		r.idle.remove(ls)
		r.idleBytes -= ls.size
		delete(r.live, key)
	default:
		ls.forgotten = true
	}
}

// idleList is a doubly linked list of idle live sessions, through the
// sessions themselves, so that a session going idle costs no allocation.
type idleList struct {
	head, tail *liveSession
	n          int
}

func (l *idleList) pushFront(ls *liveSession) {
	ls.prev, ls.next, ls.idle = nil, l.head, true
	if l.head != nil {
		l.head.prev = ls
	} else {
		l.tail = ls
	}
	l.head = ls
	l.n++
}

func (l *idleList) remove(ls *liveSession) {
	if ls.prev != nil {
		ls.prev.next = ls.next
	} else {
		l.head = ls.next
	}
	if ls.next != nil {
		ls.next.prev = ls.prev
	} else {
		l.tail = ls.prev
	}
	ls.prev, ls.next, ls.idle = nil, nil, false
	l.n--
}

// load returns the live session for an invocation: the cached copy brought
// up to date, or a fresh load (creating the session if create is set).
func (r *Runner) load(ctx context.Context, ls *liveSession, create bool) (*session.Session, error) {
	svc := r.cfg.Sessions
	if ls.sess != nil {
		err := svc.Refresh(ctx, ls.sess)
		if err == nil {
			ls.began = ls.sess.Len()
			return ls.sess, nil
		}
		ls.sess = nil
		if !errors.Is(err, session.ErrNotFound) {
			return nil, fmt.Errorf("runner: %w", err)
		}
	}
	sess, err := svc.Get(ctx, ls.key, nil)
	if errors.Is(err, session.ErrNotFound) && create {
		sess, err = svc.Create(ctx, ls.key, nil)
		if errors.Is(err, session.ErrAlreadyExists) {
			sess, err = svc.Get(ctx, ls.key, nil)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	ls.sess, ls.began, ls.trimmed = sess, sess.Len(), 0
	return sess, nil
}
