package artifact

import (
	"net/url"
	"strconv"
	"strings"
)

// URIScheme is the scheme of artifact references in file data parts.
const URIScheme = "artifact"

// URI returns a reference to a version of an artifact of the current
// session, for the FileURI of a genai file data part:
// "artifact:NAME?version=V", the name path-escaped, or "artifact:NAME" for
// the latest version (a negative version). An LLM agent replaces such
// parts with the artifact's content when it builds a model request.
func URI(name string, version int64) string {
	if version < 0 {
		return URIScheme + ":" + url.PathEscape(name)
	}
	return URIScheme + ":" + url.PathEscape(name) + "?version=" + strconv.FormatInt(version, 10)
}

// ParseURI reads a reference made by URI. A reference without a version
// names the latest.
func ParseURI(uri string) (name string, version int64, ok bool) {
	rest, found := strings.CutPrefix(uri, URIScheme+":")
	if !found {
		return "", 0, false
	}
	rest, query, _ := strings.Cut(rest, "?")
	name, err := url.PathUnescape(rest)
	if err != nil || name == "" {
		return "", 0, false
	}
	version = Latest
	if query != "" {
		q, err := url.ParseQuery(query)
		if err != nil {
			return "", 0, false
		}
		if v := q.Get("version"); v != "" {
			if version, err = strconv.ParseInt(v, 10, 64); err != nil || version < 0 {
				return "", 0, false
			}
		}
	}
	return name, version, true
}
