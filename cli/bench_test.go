package cli_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/loomkit/loom/cli"
)

// BenchmarkWebStartup measures "loom web" from the call to the first
// answered /health request, over a fresh SQLite file each time (schema
// creation included), then shuts the server down. It is the in-process part
// of start-up; a process adds its exec and runtime start.
func BenchmarkWebStartup(b *testing.B) {
	dir := b.TempDir()
	for i := 0; b.Loop(); i++ {
		ctx, cancel := context.WithCancel(context.Background())
		urls := make(chan string, 1)
		done := make(chan int, 1)
		db := "sqlite://" + filepath.Join(dir, "s"+strconv.Itoa(i)+".db")
		go func() {
			done <- cli.Run(ctx, []string{"web", "--port", "0", "--sessions", db, "--artifacts", "memory://"},
				cli.Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: noEnv, Listening: func(u string) { urls <- u }}, assistantApp)
		}()
		var base string
		select {
		case base = <-urls:
		case code := <-done:
			b.Fatalf("exit %d", code)
		}
		res, err := http.Get(base + "/health")
		if err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
		b.StopTimer()
		cancel()
		<-done
		b.StartTimer()
	}
}
