package artifact_test

import (
	"fmt"
	"testing"

	"github.com/loomkit/loom/artifact"
)

func TestURIRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    int64
	}{{"report.pdf", 0}, {"user:notes v2.txt", 7}, {"a/b?c", 3}} {
		uri := artifact.URI(tc.name, tc.v)
		name, v, ok := artifact.ParseURI(uri)
		if !ok || name != tc.name || v != tc.v {
			t.Errorf("%q: got %q %d %v", uri, name, v, ok)
		}
	}
	if name, v, ok := artifact.ParseURI(artifact.URI("x", artifact.Latest)); !ok || name != "x" || v != artifact.Latest {
		t.Errorf("no version: %q %d %v", name, v, ok)
	}
	for _, bad := range []string{"gs://bucket/x", "artifact:", "artifact:x?version=-2", "artifact:x?version=a", "artifact:%zz"} {
		if _, _, ok := artifact.ParseURI(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func ExampleURI() {
	uri := artifact.URI("chart 1.png", 2)
	name, version, _ := artifact.ParseURI(uri)
	fmt.Println(uri)
	fmt.Println(name, version)
	// Output:
	// artifact:chart%201.png?version=2
	// chart 1.png 2
}
