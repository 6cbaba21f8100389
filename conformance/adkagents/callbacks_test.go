package adkagents

import (
	"context"
	"maps"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// callbackContext returns a callback context over a new session holding
// state.
func callbackContext(t *testing.T, state map[string]any) *agent.CallbackContext {
	t.Helper()
	sess, err := memsession.NewService().Create(context.Background(), session.Key{AppName: "a", UserID: "u", SessionID: "s"}, state)
	if err != nil {
		t.Fatal(err)
	}
	return agent.NewCallbackContext(agent.NewInvocation(agent.InvocationConfig{Session: sess}))
}

// TestCallbacks checks each of the suite's callbacks: the state it writes
// (as the callback's staged delta) and the content it returns, which
// replaces the agent's run when not nil.
func TestCallbacks(t *testing.T) {
	ctx := context.Background()
	type callback = func(context.Context, *agent.CallbackContext) (*genai.Content, error)
	cases := []struct {
		name      string
		fn        callback
		state     map[string]any
		wantDelta map[string]any
		wantText  string // "" when the callback returns nil content
		wantErr   string
	}{
		{name: "before_agent_callback1", fn: setValue1("before_agent_callback_state_key"),
			wantDelta: map[string]any{"before_agent_callback_state_key": "value1"}},
		{name: "before_agent_callback2", fn: appendValue2("before_agent_callback_state_key"),
			state:     map[string]any{"before_agent_callback_state_key": "value1"},
			wantDelta: map[string]any{"before_agent_callback_state_key": "value1+value2"}},
		{name: "before_agent_callback2 without callback1", fn: appendValue2("before_agent_callback_state_key"),
			wantErr: `"before_agent_callback_state_key" holds no string`},
		{name: "after_agent_callback1", fn: setValue1("after_agent_callback_state_key"),
			wantDelta: map[string]any{"after_agent_callback_state_key": "value1"}},
		{name: "after_agent_callback2", fn: appendValue2("after_agent_callback_state_key"),
			state:     map[string]any{"after_agent_callback_state_key": "value1"},
			wantDelta: map[string]any{"after_agent_callback_state_key": "value1+value2"}},
		{name: "shortcut_agent_execution first turn", fn: shortcutAgentExecution,
			wantDelta: map[string]any{"conversation_limit_reached": "True"}},
		{name: "shortcut_agent_execution later turn", fn: shortcutAgentExecution,
			state:    map[string]any{"conversation_limit_reached": "True"},
			wantText: "Sorry, you have reached the limit of the conversation."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cc := callbackContext(t, c.state)
			content, err := c.fn(ctx, cc)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cc.Actions().StateDelta; !maps.Equal(got, c.wantDelta) {
				t.Errorf("state delta = %v, want %v", got, c.wantDelta)
			}
			for k, v := range c.wantDelta {
				if got, _ := cc.State().Get(k); got != v {
					t.Errorf("state[%q] = %v after the callback, want %v", k, got, v)
				}
			}
			switch {
			case c.wantText == "" && content != nil:
				t.Errorf("content = %+v, want nil (the agent runs)", content)
			case c.wantText != "":
				if content == nil || content.Role != genai.RoleModel || len(content.Parts) != 1 || content.Parts[0].Text != c.wantText {
					t.Errorf("content = %+v, want the model text %q", content, c.wantText)
				}
			}
		})
	}
}
