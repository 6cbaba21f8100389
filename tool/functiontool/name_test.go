package functiontool

import (
	"regexp"
	"strings"
	"testing"
)

// TestValidNameMatchesRule checks the hand-written name check against the
// rule as a regular expression, on names at and around every boundary.
func TestValidNameMatchesRule(t *testing.T) {
	rule := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$`)
	names := []string{
		"", "a", "Z", "_", "0", "9a", ".a", ":a", "-a", "a0", "a.b:c-d_e", "ok_name.v1:x-y",
		"a b", "a/b", "a\n", "\na", "é", "aé", "a\x00", "a$", "a+b", "A_", "__",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 65),
		"_" + strings.Repeat("9", 63), "_" + strings.Repeat("9", 64),
		strings.Repeat("é", 10), "a" + strings.Repeat("é", 31),
	}
	for c := 0; c < 256; c++ {
		names = append(names, string(rune(c)), "a"+string(rune(c)), string([]byte{'a', byte(c)}))
	}
	for _, name := range names {
		if got, want := validName(name), rule.MatchString(name); got != want {
			t.Errorf("validName(%q) = %v, want %v", name, got, want)
		}
	}
}
