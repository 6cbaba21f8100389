package fileartifact_test

import (
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/artifact"
)

// BenchmarkSave measures one durable save (write, fsync, link, directory
// sync) of a 64 KiB artifact.
func BenchmarkSave(b *testing.B) {
	svc := artifact.NewService(open(b, b.TempDir()))
	ref := artifact.Ref{AppName: "a", UserID: "u", SessionID: "s", Name: "bench.bin"}
	part := &genai.Part{InlineData: &genai.Blob{MIMEType: "application/octet-stream", Data: make([]byte, 64<<10)}}
	b.SetBytes(64 << 10)
	for b.Loop() {
		if _, err := svc.Save(b.Context(), ref, part); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadLatest measures loading the newest of 100 versions.
func BenchmarkLoadLatest(b *testing.B) {
	svc := artifact.NewService(open(b, b.TempDir()))
	ref := artifact.Ref{AppName: "a", UserID: "u", SessionID: "s", Name: "bench.txt"}
	for range 100 {
		if _, err := svc.Save(b.Context(), ref, genai.NewPartFromText("some text")); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, err := svc.Load(b.Context(), ref, artifact.Latest); err != nil {
			b.Fatal(err)
		}
	}
}
