package codec

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"google.golang.org/genai"
)

func TestRoundTrip(t *testing.T) {
	data := []byte("\n\x00binary\n{}")
	parts := []*genai.Part{
		genai.NewPartFromText("hello\nworld"),
		{InlineData: &genai.Blob{MIMEType: "image/png", Data: data, DisplayName: "pic"}},
		{InlineData: &genai.Blob{MIMEType: "text/plain"}},
		{FileData: &genai.FileData{FileURI: "gs://b/o", MIMEType: "application/pdf"}},
	}
	for _, p := range parts {
		b, err := Encode("dir/name.txt", p)
		if err != nil {
			t.Fatal(err)
		}
		name, got, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if name != "dir/name.txt" || got.Text != p.Text {
			t.Errorf("Decode = %q %q", name, got.Text)
		}
		if (got.InlineData == nil) != (p.InlineData == nil) ||
			p.InlineData != nil && (!bytes.Equal(got.InlineData.Data, p.InlineData.Data) || got.InlineData.MIMEType != p.InlineData.MIMEType || got.InlineData.DisplayName != p.InlineData.DisplayName) {
			t.Errorf("inline data = %+v, want %+v", got.InlineData, p.InlineData)
		}
		if (got.FileData == nil) != (p.FileData == nil) || p.FileData != nil && *got.FileData != *p.FileData {
			t.Errorf("file data = %+v, want %+v", got.FileData, p.FileData)
		}
		if n, err := DecodeName(b); err != nil || n != "dir/name.txt" {
			t.Errorf("DecodeName = %q, %v", n, err)
		}
	}
	if p := parts[1]; string(p.InlineData.Data) != string(data) {
		t.Errorf("Encode changed its input: %q", p.InlineData.Data)
	}
}

func TestDecodeCorrupt(t *testing.T) {
	for _, b := range []string{"", "no newline", "{bad json\n", `{"v":2,"part":{}}` + "\n", `{"v":1}` + "\n"} {
		if _, _, err := Decode([]byte(b)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Decode(%q) err = %v, want ErrCorrupt", b, err)
		}
	}
}

func TestEscape(t *testing.T) {
	cases := map[string]string{
		"":        "%",
		"abc.txt": "abc.txt",
		"ABC":     "%41%42%43",
		".hidden": "%2Ehidden",
		"..":      "%2E.",
		"a/b":     "a%2Fb",
		"a%2Fb":   "a%252%46b",
		"~":       "%7E",
		"user:x":  "user%3Ax",
		"ü":       "%C3%BC",
	}
	for in, want := range cases {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
	long := strings.Repeat("A", 100)
	if got := Escape(long); !Hashed(got) || len(got) > MaxSegment {
		t.Errorf("Escape(long) = %q, want a hashed segment", got)
	}
	if Escape(long) == Escape(long+"A") {
		t.Errorf("distinct long strings share a segment")
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", ".", "..", "a/b", "A%41", "~x", "ü", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		seg := Escape(s)
		if seg == "" || seg == "." || seg == ".." || strings.ContainsAny(seg, "/\\:\x00") || strings.HasPrefix(seg, ".") || len(seg) > MaxSegment {
			t.Fatalf("Escape(%q) = %q is not a safe segment", s, seg)
		}
		if strings.ToLower(seg) != seg && !strings.Contains(seg, "%") {
			t.Fatalf("Escape(%q) = %q has upper-case letters", s, seg)
		}
		if Hashed(seg) {
			return
		}
		back, err := Unescape(seg)
		if err != nil || back != s {
			t.Fatalf("Unescape(Escape(%q)) = %q, %v", s, back, err)
		}
	})
}
