package cli

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestKeptSecretAppearsWhole: processes that start together on a new
// database race to keep its key; each reads the one secret written,
// whole, never an empty or partly written file.
func TestKeptSecretAppearsWhole(t *testing.T) {
	for round := range 300 {
		file := filepath.Join(t.TempDir(), CallKeyFile)
		const racers = 8
		read := make([][]byte, racers)
		wrote := make([]bool, racers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range racers {
			wg.Go(func() {
				secret := make([]byte, 4096)
				rand.Read(secret)
				<-start
				ok, err := keepSecret(file, secret)
				if err != nil {
					t.Error(err)
					return
				}
				wrote[i] = ok
				read[i], _ = os.ReadFile(file)
			})
		}
		close(start)
		wg.Wait()
		stored, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		writers := 0
		for i := range racers {
			if wrote[i] {
				writers++
			}
			if !bytes.Equal(read[i], stored) {
				t.Fatalf("round %d: racer %d read %d bytes, not the %d stored", round, i, len(read[i]), len(stored))
			}
		}
		if writers != 1 {
			t.Fatalf("round %d: %d racers wrote the secret, want 1", round, writers)
		}
	}
}
