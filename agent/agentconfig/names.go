package agentconfig

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxNameBytes bounds the names CheckName accepts: the longest app id the
// server's routes take.
const MaxNameBytes = 128

// CheckName reports whether name may name an agent of a config file or an
// app loaded from a directory: it starts with a letter or "_" and holds
// only letters, digits, "_" and "-", in at most MaxNameBytes bytes.
// Letters and digits are Unicode ones, as in the Python identifiers ADK
// requires of agent names; "-" is allowed as app names ("loom create
// my-app") have it. The rule keeps names usable as path segments and ids
// on every route: no spaces, dots, slashes or control characters.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("the name is empty")
	case len(name) > MaxNameBytes:
		return fmt.Errorf("the name %q is %d bytes long, more than %d", name, len(name), MaxNameBytes)
	case !utf8.ValidString(name):
		return fmt.Errorf("the name %q is not valid UTF-8", name)
	}
	for i, r := range name {
		ok := r == '_' || unicode.IsLetter(r)
		if i > 0 {
			ok = ok || r == '-' || unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc)
		}
		if !ok {
			return fmt.Errorf("the name %q is not allowed: a name starts with a letter or '_' and holds only letters, digits, '_' and '-'", name)
		}
	}
	return nil
}
