// Package rouge computes ROUGE-1 as ADK's response match does (the
// rouge_score package with NLTK's Porter stemmer), so that scores agree.
package rouge

import (
	"regexp"
	"strings"
	"unicode"
)

// Score is a ROUGE-1 precision, recall and F-measure.
type Score struct {
	Precision, Recall, F float64
}

var nonAlnum = regexp.MustCompile(`[^a-z0-9]+`)

// Tokens splits text into ROUGE tokens: lowercased, every run of
// characters other than a-z and 0-9 a separator, and tokens longer than
// three characters Porter-stemmed.
func Tokens(text string) []string { return tokens(text, true) }

func tokens(text string, stem bool) []string {
	text = nonAlnum.ReplaceAllString(strings.ToLower(text), " ")
	var out []string
	for _, tok := range strings.Fields(text) {
		if stem && len(tok) > 3 {
			tok = Stem(tok)
		}
		if tok != "" {
			out = append(out, tok)
		}
	}
	return out
}

// One scores candidate against reference by unigram overlap: precision
// over the candidate's tokens, recall over the reference's, F their
// harmonic mean. Text without tokens scores 0.
func One(candidate, reference string) Score {
	stem := latin(candidate) && latin(reference)
	cand, ref := tokens(candidate, stem), tokens(reference, stem)
	if len(cand) == 0 || len(ref) == 0 {
		return Score{}
	}
	counts := map[string]int{}
	for _, t := range ref {
		counts[t]++
	}
	overlap := 0
	for _, t := range cand {
		if counts[t] > 0 {
			counts[t]--
			overlap++
		}
	}
	p := float64(overlap) / float64(len(cand))
	r := float64(overlap) / float64(len(ref))
	if p+r == 0 {
		return Score{Precision: p, Recall: r}
	}
	return Score{Precision: p, Recall: r, F: 2 * p * r / (p + r)}
}

// latin reports whether most letters of text are Latin script (or it has
// none). Like ADK, stemming is used only when both texts are.
func latin(text string) bool {
	letters, latins := 0, 0
	for _, r := range text {
		if unicode.IsLetter(r) {
			letters++
			if unicode.Is(unicode.Latin, r) {
				latins++
			}
		}
	}
	return letters == 0 || float64(latins)/float64(letters) > 0.5
}
