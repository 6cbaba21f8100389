package event

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// PythonRepr renders a JSON-like value the way Python's repr renders the
// same value decoded from JSON, which is how ADK shows another agent's
// function calls and results to a model: {'key': 'text', 'n': 1, 'ok':
// True, 'none': None}. Map keys are sorted, since Go maps keep no order.
// A whole number renders as an integer (JSON does not tell 2 from 2.0
// once decoded); other numbers as Python's shortest float. A value of
// another type renders as its JSON form decoded, or with Go's formatting
// when JSON cannot hold it.
func PythonRepr(v any) string {
	var b strings.Builder
	writeRepr(&b, v, 0)
	return b.String()
}

// maxReprDepth bounds the nesting PythonRepr follows.
const maxReprDepth = 100

func writeRepr(b *strings.Builder, v any, depth int) {
	if depth > maxReprDepth {
		b.WriteString("...")
		return
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case string:
		writeStringRepr(b, x)
	case float64:
		b.WriteString(floatRepr(x))
	case float32:
		b.WriteString(floatRepr(float64(x)))
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case int32:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case uint64:
		b.WriteString(strconv.FormatUint(x, 10))
	case json.Number:
		if i, err := x.Int64(); err == nil {
			b.WriteString(strconv.FormatInt(i, 10))
		} else if f, err := x.Float64(); err == nil {
			b.WriteString(floatRepr(f))
		} else {
			b.WriteString(x.String())
		}
	case map[string]any:
		writeDictRepr(b, x, depth)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, e, depth+1)
		}
		b.WriteByte(']')
	default:
		writeOtherRepr(b, v, depth)
	}
}

// writeDictRepr writes a map as a Python dict, its keys sorted.
func writeDictRepr(b *strings.Builder, m map[string]any, depth int) {
	b.WriteByte('{')
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		writeStringRepr(b, k)
		b.WriteString(": ")
		writeRepr(b, m[k], depth+1)
	}
	b.WriteByte('}')
}

// writeOtherRepr writes a value of any other type: an integer of a named
// type as the integer, anything else as its JSON form, or as its Go text
// when it has none.
func writeOtherRepr(b *strings.Builder, v any, depth int) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(rv.Int(), 10))
		return
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		b.WriteString(strconv.FormatUint(rv.Uint(), 10))
		return
	}
	data, err := json.Marshal(v)
	var generic any
	if err == nil {
		err = json.Unmarshal(data, &generic)
	}
	if err != nil {
		writeStringRepr(b, fmt.Sprint(v))
		return
	}
	writeRepr(b, generic, depth+1)
}

// floatRepr is Python's repr of a float, except that a whole number within
// an int64 renders as an integer.
func floatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f == math.Trunc(f) && math.Abs(f) < 1<<63:
		return strconv.FormatInt(int64(f), 10)
	}
	// Python uses the shortest digits that round-trip, in positional
	// notation when the exponent is in [-4, 16), else in scientific
	// notation with at least two exponent digits.
	sci := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expStr, _ := strings.Cut(sci, "e")
	exp, _ := strconv.Atoi(expStr)
	if exp >= -4 && exp < 16 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	sign := "+"
	if exp < 0 {
		sign, exp = "-", -exp
	}
	return fmt.Sprintf("%se%s%02d", mant, sign, exp)
}

// writeStringRepr writes Python's repr of s: single quotes unless s holds
// a single quote and no double quote, with backslash escapes for the
// quote, backslashes and characters that do not print.
func writeStringRepr(b *strings.Builder, s string) {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	b.WriteByte(quote)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			// Not UTF-8: Python would have failed to decode it; show the byte.
			fmt.Fprintf(b, `\x%02x`, s[i])
			i++
			continue
		}
		i += size
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == ' ' || (r < utf8.RuneSelf && r > ' ' && r < 0x7f):
			b.WriteRune(r)
		case r < 0x100 && !isPythonPrintable(r):
			fmt.Fprintf(b, `\x%02x`, r)
		case r < 0x10000 && !isPythonPrintable(r):
			fmt.Fprintf(b, `\u%04x`, r)
		case !isPythonPrintable(r):
			fmt.Fprintf(b, `\U%08x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(quote)
}

// isPythonPrintable approximates Python's str.isprintable for one
// character: letters, marks, numbers, punctuation, symbols and the ASCII
// space print; other separators and control, format, private-use and
// unassigned characters do not.
func isPythonPrintable(r rune) bool {
	if r == ' ' {
		return true
	}
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S)
}
