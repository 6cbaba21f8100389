package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/loomkit/loom/event"
)

// BenchmarkDecodeRunRequest decodes the body of a /run_sse request as S5
// sends it.
func BenchmarkDecodeRunRequest(b *testing.B) {
	body := []byte(`{"appName":"s1","userId":"user1","sessionId":"0b5e0d43-5d6f-4b8a-9a44-3c1f1e2f4a55","newMessage":{"role":"user","parts":[{"text":"What is 1+2?"}]},"streaming":false}`)
	r := httptest.NewRequest("POST", "/run_sse", nil)
	b.ReportAllocs()
	for b.Loop() {
		r.Body = io.NopCloser(bytes.NewReader(body))
		req, err := decodeRunRequest(r)
		if err != nil || req.NewMessage.Parts[0].Text != "What is 1+2?" || req.SessionID == "" {
			b.Fatalf("%+v, %v", req, err)
		}
	}
}

// FuzzDecodeObject checks decodeObject against encoding/json's reading of
// the same body: the same members, or an error for the same bodies.
func FuzzDecodeObject(f *testing.F) {
	for _, s := range []string{
		`{"appName":"s1","userId":"u","newMessage":{"parts":[{"text":"a,b}]\"c"}]},"streaming":false}`,
		` { "app_name" : "x" , "state_delta" : {"k":[1,{"a":null}]}, "n": -1.5e3, "t": true, "z": null } `,
		`{"a\u0062":"\u00e9\n","":[],"x":{}}`, `{}`, `[]`, `"s"`, `{"a":1,}`, `{"a" 1}`, "{\"\xff\":1}", `{"a":1}{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := decodeObject(body)
		var want map[string]json.RawMessage
		trimmed := bytes.TrimSpace(body)
		werr := json.Unmarshal(trimmed, &want)
		if len(trimmed) == 0 || string(trimmed) == "null" {
			werr, want = nil, map[string]json.RawMessage{}
		}
		if (err != nil) != (werr != nil) {
			t.Fatalf("%q: error %v, encoding/json %v", body, err, werr)
		}
		if err != nil {
			return
		}
		exp := fields{}
		camel := map[string]int{}
		for k, v := range want {
			if camel[event.CamelCase(k)]++; string(v) != "null" {
				exp[event.CamelCase(k)] = v
			}
		}
		for _, n := range camel {
			if n > 1 {
				return // two spellings of one key: the last one sent wins
			}
		}
		if len(got) != len(exp) {
			t.Fatalf("%q: members %q, want %q", body, got, exp)
		}
		for k, v := range exp {
			if !bytes.Equal(bytes.TrimSpace(got[k]), v) {
				t.Fatalf("%q: member %q = %q, want %q", body, k, got[k], v)
			}
		}
	})
}

// TestMemberNamesAsDecoded: a key read from memberNames is the name the
// general path makes of it, and both spellings of each name are there.
func TestMemberNamesAsDecoded(t *testing.T) {
	names := map[string]int{}
	for quoted, name := range memberNames {
		var k string
		if err := json.Unmarshal([]byte(quoted), &k); err != nil {
			t.Fatal(err)
		}
		if got := event.CamelCase(k); got != name {
			t.Errorf("%s maps to %q, decoded it is %q", quoted, name, got)
		}
		names[name]++
	}
	for name, n := range names {
		if n != 2 && name != "streaming" && name != "state" {
			t.Errorf("%q has %d spellings, want 2", name, n)
		}
	}
}
