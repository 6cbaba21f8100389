package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/term"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
)

// chat runs "loom run APP": a conversation in the terminal.
// pickApp picks the application positional names: one of p's, or a
// directory holding an agent config file (DIR/APP).
func (p Program) pickApp(positional []string) (App, error) {
	app, err := pickApp(positional, p.Apps)
	if err != nil && len(positional) == 1 && isApp(positional[0]) {
		var found []*fileApp
		if found, err = findFileApps(positional[0]); err == nil {
			app = App{Name: found[0].name, file: found[0]}
		}
	}
	return app, err
}

func chat(ctx context.Context, env Env, args []string, p Program) error {
	fs := newFlagSet("run", "run [flags] APP [flags]\n\nChats with APP in the terminal (APP is the name of an application of the program, or the path of a directory holding root_agent.yaml): each line read is a message; the answer streams as it is generated. In a terminal, lines can be edited and Up and Down recall earlier ones; colour is used unless NO_COLOR is set. EOF (Ctrl-D) ends with status 0; EOF while a tool call awaits approval leaves it pending and exits with status 1; Ctrl-C exits with status 130 (an approval it interrupts stays pending). With input that is not a terminal, a turn that fails ends the run with status 1. An application whose config files do not load stops the run at start-up. With --session, the session's earlier conversation is shown first (on stderr) and an approval it left pending is asked again.", env)
	var o options
	o.register(fs)
	sid := fs.String("session", "", "continue the session with this `id` (created if missing; default: a new session)")
	user := fs.String("user", "user", "user `id`")
	noStream := fs.Bool("no-stream", false, "print answers only when complete")
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	app, err := p.pickApp(positional)
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s run: %v\n", env.Name, err)
		fs.Usage()
		return errUsage
	}
	svc, runners, err := setup(ctx, env, &o, []App{app}, p.Registry)
	if err != nil {
		return err
	}
	defer svc.close()
	defer closeFileApps([]App{app})
	if f := app.file; f != nil {
		// A chat with an application that does not load has nothing to
		// talk to: stop here, not at every message (the error was
		// logged while loading).
		if err := f.loadError(); err != nil {
			return fmt.Errorf("app %s does not load; fix %s and run again", app.Name, filepath.Join(f.dir, agentconfig.RootFile))
		}
	}
	r := runners[0]

	key := session.Key{AppName: app.Name, UserID: *user, SessionID: *sid}
	var sess *session.Session
	if key.SessionID != "" {
		sess, err = r.Sessions().Get(ctx, key, nil)
		if err != nil && !errors.Is(err, session.ErrNotFound) {
			return err
		}
	}
	c := &chatter{env: env, r: r, key: key, app: app.Name, streaming: !*noStream, tty: isTerminal(env.Stdin)}
	c.out = &statusWriter{w: env.Stdout, c: c}
	c.color = isTerminal(env.Stdout) && useColor(env.Getenv)
	c.thinking = c.tty && isTerminal(env.Stderr)
	if sess != nil {
		fmt.Fprintf(env.Stderr, "loom: continuing session %s\n", sess.ID())
		c.history(sess.Events())
	} else {
		if sess, err = r.Sessions().Create(ctx, key, nil); err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "loom: new session %s (continue it with --session %s)\n", sess.ID(), sess.ID())
	}
	c.key.SessionID = sess.ID()
	if f, ok := env.Stdin.(*os.File); ok && c.tty {
		c.in = newTermReader(f, env.Stderr)
	} else {
		c.in = &pipeReader{lines: readLines(ctx, env.Stdin), env: env, tty: c.tty}
	}
	return c.loop(ctx)
}

// parseInterspersed parses args with fs, accepting flags before and after
// the positional arguments (loom run APP --session ID as well as loom run
// --session ID APP), and returns the positional arguments. After "--"
// everything is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

func pickApp(args []string, apps []App) (App, error) {
	names := make([]string, len(apps))
	for i, a := range apps {
		names[i] = a.Name
	}
	switch {
	case len(args) > 1:
		return App{}, fmt.Errorf("expected one application, got %q", args)
	case len(args) == 0 && len(apps) == 1:
		return apps[0], nil
	case len(args) == 0:
		return App{}, fmt.Errorf("name the application to run: one of %s", strings.Join(names, ", "))
	}
	for _, a := range apps {
		if a.Name == args[0] {
			return a, nil
		}
	}
	return App{}, fmt.Errorf("unknown application %q (have %s)", args[0], strings.Join(names, ", "))
}

// chatter holds one terminal conversation.
type chatter struct {
	env       Env
	r         *runner.Runner
	key       session.Key
	app       string
	streaming bool
	tty       bool
	in        lineReader
	// out is env.Stdout, through which the first output of a turn
	// erases the "thinking" state.
	out *statusWriter
	// color: stdout is a terminal and NO_COLOR is not set.
	color bool
	// thinking: show a "thinking" state on stderr while a turn has
	// printed nothing yet.
	thinking bool
	// status: the thinking state is on the screen.
	status bool

	// open is the author whose streamed text is being printed, or "".
	open string
	// pending are confirmation requests of the last turn awaiting an answer.
	pending []*genai.FunctionCall
}

func (c *chatter) loop(ctx context.Context) error {
	if c.tty {
		fmt.Fprintln(c.env.Stderr, "loom: type a message and press Enter; Up recalls earlier lines; Ctrl-D quits.")
	}
	for {
		msg, err := c.next(ctx)
		if err != nil || msg == nil {
			return err
		}
		if err := c.turn(ctx, msg); err != nil {
			if ctx.Err() != nil {
				return interrupted(ctx)
			}
			if !c.tty {
				// A script learns of the failure from the exit status,
				// and the lines after it are not sent to a model that
				// fails.
				return err
			}
			fmt.Fprintf(c.env.Stderr, "%s\n", c.paint(red, "error: "+err.Error()))
		}
	}
}

// next returns the next message to send: the answers to the pending
// confirmation requests if there are any, else the next non-empty input
// line. It returns nil at EOF; an error at EOF while an approval is
// pending, which would otherwise wait unnoticed; an interruptedError when
// ctx is done or the user pressed Ctrl-C (saying first what is pending).
func (c *chatter) next(ctx context.Context) (*genai.Content, error) {
	if len(c.pending) > 0 {
		msg, err := c.confirm(ctx)
		if err == errInterrupt {
			fmt.Fprintf(c.env.Stderr, "%s: interrupted; %v\n", c.env.Name, c.pendingError())
			return nil, interrupted(ctx)
		}
		if err != nil {
			return nil, c.pendingError()
		}
		return msg, nil
	}
	for {
		line, err := c.in.readLine(ctx, "> ")
		if err == errInterrupt {
			return nil, interrupted(ctx)
		}
		if err != nil {
			return nil, nil
		}
		if strings.TrimSpace(line) != "" {
			return genai.NewContentFromText(line, genai.RoleUser), nil
		}
	}
}

// pendingError describes the approvals left unanswered at EOF.
func (c *chatter) pendingError() error {
	calls := make([]string, len(c.pending))
	for i, fc := range c.pending {
		_, calls[i] = describeConfirmation(fc)
	}
	return fmt.Errorf("an approval is still pending: %s; the call waits until it is answered (%s run --session %s %s)",
		strings.Join(calls, ", "), c.env.Name, c.key.SessionID, c.app)
}

// historyLimit bounds the earlier events shown when a session continues.
const historyLimit = 40

// history prints the earlier conversation of a continued session on stderr,
// compactly (the last historyLimit events), and takes over the
// confirmation requests it left unanswered, so that they are asked again.
func (c *chatter) history(events []*event.Event) {
	shown := 0
	w := &chatter{env: c.env}
	w.env.Stdout = c.env.Stderr
	if skipped := len(events) - historyLimit; skipped > 0 {
		fmt.Fprintf(c.env.Stderr, "  (%d earlier events not shown)\n", skipped)
	}
	for i, ev := range events {
		if ev == nil || ev.Partial {
			continue
		}
		show := i >= len(events)-historyLimit
		if ev.Author == event.AuthorUser {
			if text := model.Text(ev.Content, ""); text != "" && show {
				fmt.Fprintf(c.env.Stderr, "> %s\n", shorten(text))
				shown++
			}
			continue
		}
		calls, kinds := agent.PausingCalls(ev)
		for j, fc := range calls {
			if asksUser(kinds[j]) && agent.Waiting(events[i+1:], kinds[j], fc.ID) {
				c.pending = append(c.pending, fc)
			}
		}
		if show {
			w.print(ev)
			shown++
		}
	}
	if shown > 0 {
		fmt.Fprintln(c.env.Stderr, "  (end of the earlier conversation)")
	}
}

// asksUser reports whether the chat asks the user to answer a pausing
// call of kind k: a confirmation or a workflow node's request for input.
// Other pausing calls (a long-running tool, a credential request) are
// shown as calls and left to their own clients.
func asksUser(k agent.PauseKind) bool {
	return k == agent.PauseConfirmation || k == agent.PauseInput
}

// stateLine shows a state delta as "key=value, ...", keys sorted, values
// as compact JSON.
func stateLine(delta map[string]any) string {
	keys := make([]string, 0, len(delta))
	for k := range delta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + compact(delta[k])
	}
	return strings.Join(parts, ", ")
}

// shorten cuts a long text for the history.
func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		return string(r[:197]) + "..."
	}
	return s
}

// turn runs one invocation and prints its events as they arrive. It
// returns the error that ended the invocation early, if any.
func (c *chatter) turn(ctx context.Context, msg *genai.Content) error {
	c.pending = nil
	if c.thinking {
		fmt.Fprint(c.env.Stderr, c.paint(dim, "thinking…"))
		c.status = true
	}
	defer c.clearStatus()
	opts := &runner.RunOptions{Streaming: c.streaming}
	for ev, err := range c.r.Run(ctx, c.key.UserID, c.key.SessionID, msg, opts) {
		if err != nil {
			c.close()
			c.clearStatus()
			if ctx.Err() != nil {
				fmt.Fprintf(c.env.Stderr, "%s: interrupted\n", c.env.Name)
			}
			return err
		}
		c.print(ev)
	}
	c.close()
	return nil
}

// clearStatus erases the thinking state.
func (c *chatter) clearStatus() {
	if c.status {
		c.status = false
		fmt.Fprint(c.env.Stderr, "\r\033[K")
	}
}

// statusWriter erases the chatter's thinking state before its first
// output.
type statusWriter struct {
	w io.Writer
	c *chatter
}

func (s *statusWriter) Write(p []byte) (int, error) {
	s.c.clearStatus()
	return s.w.Write(p)
}

// Terminal colours (SGR codes).
const (
	bold = "1"
	dim  = "2"
	red  = "31"
	cyan = "36"
)

// paint wraps s in the SGR code when colour is on.
func (c *chatter) paint(code, s string) string {
	if !c.color {
		return s
	}
	return "\033[" + code + "m" + s + "\033[0m"
}

// useColor applies the NO_COLOR convention (no-color.org) and TERM=dumb.
func useColor(getenv func(string) string) bool {
	return getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}

// close ends a line of streamed text.
func (c *chatter) close() {
	if c.open != "" {
		fmt.Fprintln(c.env.Stdout)
		c.open = ""
	}
}

func (c *chatter) print(ev *event.Event) {
	var out io.Writer = c.env.Stdout
	if c.out != nil {
		out = c.out
	}
	text := model.Text(ev.Content, "")
	if ev.Partial {
		if text == "" {
			return
		}
		if c.open != ev.Author {
			c.close()
			fmt.Fprintf(out, "%s ", c.paint(bold+";"+cyan, ev.Author+":"))
			c.open = ev.Author
		}
		fmt.Fprint(out, text)
		return
	}
	if c.open == ev.Author && text != "" {
		// The complete event repeats the text streamed already.
		c.close()
		text = ""
	}
	c.close()
	if text != "" {
		fmt.Fprintf(out, "%s %s\n", c.paint(bold+";"+cyan, ev.Author+":"), text)
	}
	if ev.Content == nil && len(ev.Actions.StateDelta) > 0 && ev.Actions.AgentState == nil && !ev.Actions.EndOfAgent {
		fmt.Fprintf(out, "%s\n", c.paint(dim, fmt.Sprintf("  [%s] state updated: %s", ev.Author, stateLine(ev.Actions.StateDelta))))
	}
	calls, kinds := agent.PausingCalls(ev)
	for _, fc := range ev.FunctionCalls() {
		if j := slices.Index(calls, fc); j >= 0 && asksUser(kinds[j]) {
			c.pending = append(c.pending, fc)
			continue
		}
		fmt.Fprintf(out, "%s\n", c.paint(dim, fmt.Sprintf("  [%s] → %s(%s)", ev.Author, fc.Name, compact(fc.Args))))
	}
	for _, fr := range ev.FunctionResponses() {
		fmt.Fprintf(out, "%s\n", c.paint(dim, fmt.Sprintf("  [%s] ← %s: %s", ev.Author, fr.Name, compact(fr.Response))))
	}
	if ev.Actions.TransferToAgent != "" {
		fmt.Fprintf(out, "%s\n", c.paint(dim, fmt.Sprintf("  [%s] transfers to %s", ev.Author, ev.Actions.TransferToAgent)))
	}
	if ev.ErrorCode != "" || ev.ErrorMessage != "" {
		fmt.Fprintf(out, "%s\n", c.paint(red, fmt.Sprintf("  [%s] error %s: %s", ev.Author, ev.ErrorCode, ev.ErrorMessage)))
	}
}

// confirm asks the user about the confirmation requests of the last turn
// and returns the answers as the next message. It returns io.EOF at the
// end of input and errInterrupt for Ctrl-C or a done ctx.
func (c *chatter) confirm(ctx context.Context) (*genai.Content, error) {
	msg := &genai.Content{Role: genai.RoleUser}
	for _, fc := range c.pending {
		if fc.Name == inputName {
			question, _ := fc.Args["message"].(string)
			fmt.Fprintf(c.env.Stdout, "  input needed: %s\n", question)
			line, err := c.in.readLine(ctx, "  answer: ")
			if err != nil {
				return nil, err
			}
			msg.Parts = append(msg.Parts, graph.InputResponse(fc.ID, inputAnswer(line)))
			continue
		}
		hint, call := describeConfirmation(fc)
		fmt.Fprintf(c.env.Stdout, "  confirmation needed: %s\n  %s\n", hint, call)
		line, err := c.in.readLine(ctx, "  approve? [y/N] ")
		if err != nil {
			return nil, err
		}
		yes := strings.EqualFold(strings.TrimSpace(line), "y") || strings.EqualFold(strings.TrimSpace(line), "yes")
		msg.Parts = append(msg.Parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{
			ID: fc.ID, Name: event.FunctionRequestConfirmation, Response: map[string]any{"confirmed": yes},
		}})
	}
	c.pending = nil
	return msg, nil
}

// inputName is the function call with which a workflow node asks for input.
const inputName = graph.FunctionRequestInput

// inputAnswer is the response to an input request: a JSON object typed as
// such, any other line as {"result": line}.
func inputAnswer(line string) map[string]any {
	line = strings.TrimSpace(line)
	var obj map[string]any
	if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &obj) == nil {
		return obj
	}
	return map[string]any{"result": line}
}

func describeConfirmation(fc *genai.FunctionCall) (hint, call string) {
	if fc.Name == inputName {
		question, _ := fc.Args["message"].(string)
		return "input: " + question, fmt.Sprintf("%s (%s)", question, fc.Name)
	}
	hint = "the agent asks to run a tool"
	if tc, ok := fc.Args["toolConfirmation"].(map[string]any); ok {
		if h, ok := tc["hint"].(string); ok && h != "" {
			hint = h
		}
	}
	if orig, err := agent.OriginalCall(fc); err == nil {
		call = fmt.Sprintf("%s(%s)", orig.Name, compact(orig.Args))
	}
	return hint, call
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 200 {
		return string(b[:197]) + "..."
	}
	return string(b)
}

// readLines reads r line by line on a goroutine, so that waiting for input
// does not keep the chat from noticing a cancelled context. The channel is
// closed at EOF, on a read error or when ctx is done.
func readLines(ctx context.Context, r io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			select {
			case ch <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}

// isTerminal reports whether r (a reader or writer) is an interactive
// terminal.
func isTerminal(r any) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
