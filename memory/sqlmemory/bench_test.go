package sqlmemory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/memory/sqlmemory"
)

// BenchmarkSearch searches one user's memories, four words of which two
// are common, among 20,000 entries of 10 users (12 words each, drawn with
// a skew towards a few hundred common words).
func BenchmarkSearch(b *testing.B) {
	ctx := context.Background()
	st, err := sqlmemory.Open(ctx, "sqlite://"+filepath.Join(b.TempDir(), "m.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	words := make([]string, 2000)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for u := range 10 {
		var es []memory.Entry
		for i := range 2000 {
			text := ""
			for range 12 {
				text += words[int(float64(len(words))*rng.Float64()*rng.Float64()*rng.Float64())] + " "
			}
			es = append(es, memory.Entry{ID: fmt.Sprint(i), SessionID: "s", Author: "user", Content: genai.NewContentFromText(text, genai.RoleUser)})
		}
		if err := st.Upsert(ctx, "app", fmt.Sprint("u", u), "s", es); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, err := st.Search(ctx, "app", "u3", "w1 w7 w300 w1500", 5); err != nil {
			b.Fatal(err)
		}
	}
}
