// Package codec holds the on-disk format shared by the artifact stores that
// keep versions as files or objects (fileartifact, blobartifact): how a part
// is encoded into one file, and how names and ids become path segments.
//
// # Version file
//
// A version is one file: a single line of JSON, the header, then a newline,
// then the raw inline bytes of the part, if any. The header is
//
//	{"v":1,"name":"<artifact name>","part":<genai.Part JSON without inlineData.data>}
//
// JSON never contains a raw newline, so the first newline ends the header.
// Keeping the bytes raw avoids base64 growth and lets tools read them with
// a simple offset. The whole part, including its mime type, lives in one
// file, so a version is published by a single atomic write.
//
// # Path segments
//
// [Escape] maps any string to a segment that is safe as a file or object
// name on every common file system and object store: lower-case ASCII
// letters, digits, '-', '_' and '.' (not leading) are kept, every other byte
// becomes %XX. Upper-case letters are escaped too, so names that differ only
// in case stay apart on case-insensitive file systems. A segment whose escape
// would be longer than [MaxSegment] bytes is replaced by "~" and a SHA-256 of
// the original; such segments cannot be unescaped, so readers take the
// artifact name from the header of a version file instead.
package codec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/genai"
)

// ErrCorrupt reports a version file that cannot be decoded.
var ErrCorrupt = errors.New("corrupt artifact file")

const formatVersion = 1

type header struct {
	V    int         `json:"v"`
	Name string      `json:"name"`
	Part *genai.Part `json:"part"`
}

// Encode returns the version-file encoding of part, saved under name.
func Encode(name string, part *genai.Part) ([]byte, error) {
	h := header{V: formatVersion, Name: name, Part: part}
	var data []byte
	if part.InlineData != nil {
		p := *part
		blob := *part.InlineData
		data, blob.Data = blob.Data, nil
		p.InlineData = &blob
		h.Part = &p
	}
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("encode artifact %q: %w", name, err)
	}
	out := make([]byte, 0, len(hb)+1+len(data))
	out = append(out, hb...)
	out = append(out, '\n')
	return append(out, data...), nil
}

// Decode parses a version file and returns the artifact name and part. The
// part's inline bytes are a copy: they do not share memory with b.
func Decode(b []byte) (name string, part *genai.Part, err error) {
	hb, data, ok := bytes.Cut(b, []byte{'\n'})
	if !ok {
		return "", nil, fmt.Errorf("%w: no header", ErrCorrupt)
	}
	var h header
	if err := json.Unmarshal(hb, &h); err != nil {
		return "", nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if h.V != formatVersion || h.Part == nil {
		return "", nil, fmt.Errorf("%w: unknown format %d", ErrCorrupt, h.V)
	}
	if h.Part.InlineData != nil {
		h.Part.InlineData.Data = bytes.Clone(data)
		if h.Part.InlineData.Data == nil {
			h.Part.InlineData.Data = []byte{}
		}
	}
	return h.Name, h.Part, nil
}

// DecodeName returns the artifact name in the header of a version file; b
// may be just a prefix of the file that includes the header line.
func DecodeName(b []byte) (string, error) {
	hb, _, ok := bytes.Cut(b, []byte{'\n'})
	if !ok {
		return "", fmt.Errorf("%w: no header", ErrCorrupt)
	}
	var h struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(hb, &h); err != nil {
		return "", fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return h.Name, nil
}

// MaxSegment is the longest segment Escape returns. It stays well under the
// 255-byte file name limit of common file systems.
const MaxSegment = 200

const hexDigits = "0123456789ABCDEF"

func keep(c byte, first bool) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' && !first
}

// Escape maps s to a path segment (see the package doc). Distinct strings
// map to distinct segments; the empty string maps to "%".
func Escape(s string) string {
	if s == "" {
		return "%"
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if keep(c, i == 0) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	if b.Len() > MaxSegment {
		sum := sha256.Sum256([]byte(s))
		return "~" + hex.EncodeToString(sum[:])
	}
	return b.String()
}

// Hashed reports whether seg is a hashed segment that Unescape cannot
// reverse.
func Hashed(seg string) bool { return strings.HasPrefix(seg, "~") }

// Unescape reverses Escape. It fails for hashed segments and for anything
// Escape cannot have produced.
func Unescape(seg string) (string, error) {
	if seg == "%" {
		return "", nil
	}
	if seg == "" || Hashed(seg) {
		return "", fmt.Errorf("%w: cannot unescape %q", ErrCorrupt, seg)
	}
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c != '%' {
			if !keep(c, i == 0) {
				return "", fmt.Errorf("%w: bad segment %q", ErrCorrupt, seg)
			}
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(seg) {
			return "", fmt.Errorf("%w: bad segment %q", ErrCorrupt, seg)
		}
		hi, lo := strings.IndexByte(hexDigits, seg[i+1]), strings.IndexByte(hexDigits, seg[i+2])
		if hi < 0 || lo < 0 {
			return "", fmt.Errorf("%w: bad segment %q", ErrCorrupt, seg)
		}
		b.WriteByte(byte(hi<<4 | lo))
		i += 2
	}
	return b.String(), nil
}

// ParseVersion reads a version number written as a path segment: a
// non-negative decimal integer without leading zeros.
func ParseVersion(name string) (int64, bool) {
	if name == "" || name[0] < '0' || name[0] > '9' || len(name) > 1 && name[0] == '0' {
		return 0, false
	}
	v, err := strconv.ParseInt(name, 10, 64)
	return v, err == nil && v >= 0
}
