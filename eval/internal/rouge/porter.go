package rouge

import "strings"

// The Porter stemmer as ROUGE scoring in ADK uses it: NLTK's PorterStemmer
// in its default mode, which extends Porter's 1980 algorithm (a few
// irregular words, "ies"/"ied" on short words, "y" to "i" only after a
// consonant, and the extra step-2 rules "fulli" and "logi"). Scores only
// agree with ADK's if every stem does, so the variant matters.

// irregular are the words the NLTK variant maps directly.
var irregular = map[string]string{
	"sky": "sky", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie",
	"news": "news", "innings": "inning", "inning": "inning", "outings": "outing",
	"outing": "outing", "cannings": "canning", "canning": "canning", "howe": "howe",
	"proceed": "proceed", "exceed": "exceed", "succeed": "succeed",
}

// Stem returns the Porter stem of a lowercase word.
func Stem(word string) string {
	if s, ok := irregular[word]; ok {
		return s
	}
	if len(word) <= 2 {
		return word
	}
	w := []byte(word)
	w = step1a(w)
	w = step1b(w)
	w = step1c(w)
	w = step2(w)
	w = step3(w)
	w = step4(w)
	w = step5a(w)
	w = step5b(w)
	return string(w)
}

func isVowel(c byte) bool { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' }

func consonant(w []byte, i int) bool {
	switch {
	case isVowel(w[i]):
		return false
	case w[i] == 'y':
		return i == 0 || !consonant(w, i-1)
	}
	return true
}

// measure counts the vowel-consonant sequences of a stem.
func measure(w []byte) int {
	m := 0
	for i := 1; i < len(w); i++ {
		if !consonant(w, i-1) && consonant(w, i) {
			m++
		}
	}
	return m
}

func hasVowel(w []byte) bool {
	for i := range w {
		if !consonant(w, i) {
			return true
		}
	}
	return false
}

func doubleConsonant(w []byte) bool {
	n := len(w)
	return n >= 2 && w[n-1] == w[n-2] && consonant(w, n-1)
}

func cvc(w []byte) bool {
	n := len(w)
	if n >= 3 && consonant(w, n-3) && !consonant(w, n-2) && consonant(w, n-1) {
		c := w[n-1]
		return c != 'w' && c != 'x' && c != 'y'
	}
	return n == 2 && !consonant(w, 0) && consonant(w, 1)
}

func hasSuffix(w []byte, s string) bool { return strings.HasSuffix(string(w), s) }

func replace(w []byte, suffix, repl string) []byte {
	out := make([]byte, 0, len(w)-len(suffix)+len(repl))
	return append(append(out, w[:len(w)-len(suffix)]...), repl...)
}

// rule replaces suffix by repl when cond (nil: always) holds of the stem.
type rule struct {
	suffix, repl string
	cond         func(stem []byte) bool
}

// apply applies the first rule whose suffix matches, if its condition
// holds; later rules are not tried.
func apply(w []byte, rules []rule) []byte {
	for _, r := range rules {
		if r.suffix == "*d" {
			if doubleConsonant(w) {
				stem := w[:len(w)-2]
				if r.cond == nil || r.cond(stem) {
					return append(append([]byte{}, stem...), r.repl...)
				}
				return w
			}
			continue
		}
		if hasSuffix(w, r.suffix) {
			stem := w[:len(w)-len(r.suffix)]
			if r.cond == nil || r.cond(stem) {
				return replace(w, r.suffix, r.repl)
			}
			return w
		}
	}
	return w
}

func positive(stem []byte) bool { return measure(stem) > 0 }

func step1a(w []byte) []byte {
	if hasSuffix(w, "ies") && len(w) == 4 {
		return replace(w, "ies", "ie")
	}
	return apply(w, []rule{{"sses", "ss", nil}, {"ies", "i", nil}, {"ss", "ss", nil}, {"s", "", nil}})
}

func step1b(w []byte) []byte {
	if hasSuffix(w, "ied") {
		if len(w) == 4 {
			return replace(w, "ied", "ie")
		}
		return replace(w, "ied", "i")
	}
	if hasSuffix(w, "eed") {
		if stem := w[:len(w)-3]; measure(stem) > 0 {
			return replace(w, "eed", "ee")
		}
		return w
	}
	var stem []byte
	ok := false
	for _, s := range []string{"ed", "ing"} {
		if hasSuffix(w, s) {
			stem = w[:len(w)-len(s)]
			if hasVowel(stem) {
				ok = true
				break
			}
		}
	}
	if !ok {
		return w
	}
	stem = append([]byte{}, stem...)
	last := stem[len(stem)-1]
	return apply(stem, []rule{
		{"at", "ate", nil},
		{"bl", "ble", nil},
		{"iz", "ize", nil},
		{"*d", string(last), func([]byte) bool { return last != 'l' && last != 's' && last != 'z' }},
		{"", "e", func(s []byte) bool { return measure(s) == 1 && cvc(s) }},
	})
}

func step1c(w []byte) []byte {
	return apply(w, []rule{{"y", "i", func(s []byte) bool { return len(s) > 1 && consonant(s, len(s)-1) }}})
}

func step2(w []byte) []byte {
	if hasSuffix(w, "alli") && positive(w[:len(w)-4]) {
		return step2(replace(w, "alli", "al"))
	}
	whole := w
	return apply(w, []rule{
		{"ational", "ate", positive},
		{"tional", "tion", positive},
		{"enci", "ence", positive},
		{"anci", "ance", positive},
		{"izer", "ize", positive},
		{"bli", "ble", positive},
		{"alli", "al", positive},
		{"entli", "ent", positive},
		{"eli", "e", positive},
		{"ousli", "ous", positive},
		{"ization", "ize", positive},
		{"ation", "ate", positive},
		{"ator", "ate", positive},
		{"alism", "al", positive},
		{"iveness", "ive", positive},
		{"fulness", "ful", positive},
		{"ousness", "ous", positive},
		{"aliti", "al", positive},
		{"iviti", "ive", positive},
		{"biliti", "ble", positive},
		{"fulli", "ful", positive},
		{"logi", "log", func([]byte) bool { return positive(whole[:len(whole)-3]) }},
	})
}

func step3(w []byte) []byte {
	return apply(w, []rule{
		{"icate", "ic", positive},
		{"ative", "", positive},
		{"alize", "al", positive},
		{"iciti", "ic", positive},
		{"ical", "ic", positive},
		{"ful", "", positive},
		{"ness", "", positive},
	})
}

func step4(w []byte) []byte {
	gt1 := func(s []byte) bool { return measure(s) > 1 }
	return apply(w, []rule{
		{"al", "", gt1}, {"ance", "", gt1}, {"ence", "", gt1}, {"er", "", gt1},
		{"ic", "", gt1}, {"able", "", gt1}, {"ible", "", gt1}, {"ant", "", gt1},
		{"ement", "", gt1}, {"ment", "", gt1}, {"ent", "", gt1},
		{"ion", "", func(s []byte) bool {
			return measure(s) > 1 && (s[len(s)-1] == 's' || s[len(s)-1] == 't')
		}},
		{"ou", "", gt1}, {"ism", "", gt1}, {"ate", "", gt1}, {"iti", "", gt1},
		{"ous", "", gt1}, {"ive", "", gt1}, {"ize", "", gt1},
	})
}

func step5a(w []byte) []byte {
	if hasSuffix(w, "e") {
		stem := w[:len(w)-1]
		if m := measure(stem); m > 1 || m == 1 && !cvc(stem) {
			return stem
		}
	}
	return w
}

func step5b(w []byte) []byte {
	whole := w
	return apply(w, []rule{{"ll", "l", func([]byte) bool { return measure(whole[:len(whole)-1]) > 1 }}})
}
