package rouge

import (
	"math"
	"os"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// (CONFORMANCE Q2)
func TestRouge1HandComputed(t *testing.T) {
	cases := []struct {
		cand, ref string
		p, r, f   float64
	}{
		// the×2, cat, on, mat shared of 6 tokens each.
		{"The cat sat on the mat", "The cat is on the mat", 5.0 / 6, 5.0 / 6, 5.0 / 6},
		// Stemming: expected/expects -> expect; rain, today shared.
		// P = 3/4, R = 3/5, F = 2·0.75·0.6/1.35 = 2/3.
		{"Rain is expected today", "The forecast expects rain today", 3.0 / 4, 3.0 / 5, 2.0 / 3},
		// Case and punctuation do not matter.
		{"Hello, world!!", "hello world", 1, 1, 1},
		// Counts are clipped: one "the" in the reference.
		// P = 1/3, R = 1/2, F = 2·(1/6)/(5/6) = 0.4.
		{"the the the", "the cat", 1.0 / 3, 1.0 / 2, 0.4},
		{"", "anything", 0, 0, 0},
		{"no overlap here", "entirely different words", 0, 0, 0},
	}
	for _, c := range cases {
		got := One(c.cand, c.ref)
		if !near(got.Precision, c.p) || !near(got.Recall, c.r) || !near(got.F, c.f) {
			t.Errorf("One(%q, %q) = %+v, want P %.4f R %.4f F %.4f", c.cand, c.ref, got, c.p, c.r, c.f)
		}
	}
	if got := strings.Join(Tokens("Running cats, 3-day trips!"), " "); got != "run cat 3 day trip" {
		t.Errorf("Tokens = %q", got)
	}
	// Words of three letters or fewer are not stemmed ("ran", "was").
	if got := strings.Join(Tokens("was ran"), " "); got != "was ran" {
		t.Errorf("Tokens = %q", got)
	}
}

// TestStemMatchesNLTK checks the stemmer against stems NLTK's
// PorterStemmer gives (the stemmer ADK's ROUGE scoring uses), including the
// words where NLTK's variant differs from Porter's original algorithm.
func TestStemMatchesNLTK(t *testing.T) {
	data, err := os.ReadFile("testdata/porter_nltk.txt")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.SplitSeq(string(data), "\n") {
		word, want, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		n++
		if got := Stem(word); got != want {
			t.Errorf("Stem(%q) = %q, NLTK gives %q", word, got, want)
		}
	}
	if n < 300 {
		t.Fatalf("only %d words checked", n)
	}
}
