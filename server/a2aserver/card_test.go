package a2aserver_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/loomkit/loom/server/a2aserver"
)

// TestLegacyCardPath: the card is served at the path of protocol versions
// before 0.3 too, which ADK's samples and older clients still fetch, and
// names the same JSON-RPC URL.
func TestLegacyCardPath(t *testing.T) {
	_, base := serve(t, newRunner(t))
	for _, path := range []string{a2aserver.CardPath, a2aserver.LegacyCardPath} {
		card, err := agentcard.NewResolver(http.DefaultClient).Resolve(context.Background(), base, agentcard.WithPath(path))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if card.URL != base {
			t.Errorf("%s: card URL %q, want %q", path, card.URL, base)
		}
	}
}
