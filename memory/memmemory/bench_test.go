package memmemory_test

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/memory/memmemory"
)

// BenchmarkSearch searches 10,000 memories of one user (100 sessions of
// 100 entries).
func BenchmarkSearch(b *testing.B) {
	s := memmemory.New()
	for i := range 100 {
		entries := make([]memory.Entry, 100)
		for j := range entries {
			entries[j] = memory.Entry{ID: fmt.Sprint(i, "-", j), SessionID: fmt.Sprint(i), Timestamp: time.Unix(int64(i*100+j), 0),
				Content: genai.NewContentFromText(fmt.Sprintf("note %d about topic%d and topic%d", j, j%37, i%11), genai.RoleUser)}
		}
		if err := s.Replace(b.Context(), "a", "u", fmt.Sprint(i), entries); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		res, err := s.Search(b.Context(), "a", "u", "topic5 topic7", 10)
		if err != nil || len(res) != 10 {
			b.Fatal(len(res), err)
		}
	}
}
