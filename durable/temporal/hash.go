package temporal

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/tool"
)

// TreeHash returns a hash of the structure of an agent tree: for each agent,
// depth first, its name, Go type, description, sub-agents and the names of
// its tools (for agents with a Tools method). Two trees with the same hash
// run an invocation's log the same way as far as Loom can tell; instructions,
// models and tool code are not part of it.
func TreeHash(t *agent.Tree) string {
	var b strings.Builder
	var walk func(a agent.Agent, depth int)
	walk = func(a agent.Agent, depth int) {
		fmt.Fprintf(&b, "%d\x00%s\x00%T\x00%s\x00", depth, a.Name(), a, a.Description())
		if ta, ok := a.(interface{ Tools() []tool.Tool }); ok {
			for _, tl := range ta.Tools() {
				if tl != nil {
					fmt.Fprintf(&b, "tool:%s\x00", tl.Name())
				}
			}
		}
		b.WriteByte('\n')
		for _, sub := range agent.SubAgents(a) {
			walk(sub, depth+1)
		}
	}
	walk(t.Root(), 0)
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}
