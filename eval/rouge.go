package eval

import (
	"context"
	"regexp"
	"strings"
	"unicode"
)

// ResponseMatch scores the final response against the expected one by
// ROUGE-1 F-measure, computed as ADK computes it (the rouge_score
// package with its stemmer): per invocation, then the mean.
type ResponseMatch struct{}

// Score implements Scorer.
func (ResponseMatch) Score(_ context.Context, in *ScoreInput) (*Score, error) {
	if in.Expected == nil {
		return &Score{}, nil
	}
	var out Score
	for i := 0; i < len(in.Actual) && i < len(in.Expected); i++ {
		f := Rouge1(Text(in.Actual[i].FinalResponse), Text(in.Expected[i].FinalResponse)).F
		out.PerInvocation = append(out.PerInvocation, InvocationScore{Score: ptr(f)})
	}
	out.Overall = mean(out.PerInvocation)
	return &out, nil
}

// RougeScore is a ROUGE-1 precision, recall and F-measure.
type RougeScore struct {
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

// Rouge1 scores candidate against reference by unigram overlap: precision
// over the candidate's tokens, recall over the reference's, F their
// harmonic mean. Text without tokens scores 0.
func Rouge1(candidate, reference string) RougeScore {
	stem := latin(candidate) && latin(reference)
	cand, ref := tokens(candidate, stem), tokens(reference, stem)
	if len(cand) == 0 || len(ref) == 0 {
		return RougeScore{}
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
		return RougeScore{Precision: p, Recall: r}
	}
	return RougeScore{Precision: p, Recall: r, F: 2 * p * r / (p + r)}
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
