package agent

import (
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// MaxLLMCallsEnv is the environment variable that sets the model call
// limit of invocations whose RunConfig.MaxLLMCalls is zero, as ADK's
// ADK_MAX_LLM_CALLS does: an integer, where zero or a negative value
// means no limit.
const MaxLLMCallsEnv = "ADK_MAX_LLM_CALLS"

// ResolveMaxLLMCalls returns the model call limit an invocation configured
// with n enforces: n when it is not zero (a negative n means no limit, and
// is returned as is); for zero, the integer in MaxLLMCallsEnv when it is
// set (zero or negative there means no limit, returned as -1), or
// DefaultMaxLLMCalls when it is unset, empty or not an integer (a value
// that is not an integer is reported once in the log).
func ResolveMaxLLMCalls(n int) int {
	if n != 0 {
		return n
	}
	raw, ok := os.LookupEnv(MaxLLMCallsEnv)
	raw = strings.TrimSpace(raw)
	if !ok || raw == "" {
		return DefaultMaxLLMCalls
	}
	if c := envLimit.Load(); c != nil && c.raw == raw {
		return c.limit
	}
	c := &resolvedEnv{raw: raw, limit: DefaultMaxLLMCalls}
	if v, err := strconv.Atoi(raw); err != nil {
		slog.Warn("agent: "+MaxLLMCallsEnv+" is not an integer; using the default limit", "value", raw, "default", DefaultMaxLLMCalls)
	} else if v <= 0 {
		c.limit = -1
	} else {
		c.limit = v
	}
	envLimit.Store(c)
	return c.limit
}

// resolvedEnv is the last value of MaxLLMCallsEnv read and its limit, so
// that a value is parsed, and a bad one reported, once rather than at
// every invocation.
type resolvedEnv struct {
	raw   string
	limit int
}

var envLimit atomic.Pointer[resolvedEnv]
