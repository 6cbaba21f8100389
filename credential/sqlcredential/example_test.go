package sqlcredential_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/credential/sqlcredential"
)

// Credentials kept in the session database, sealed: the next process,
// with the same key, reads them back.
func ExampleNewService() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "loom")
	defer os.RemoveAll(dir)
	dsn := "sqlite://" + filepath.Join(dir, "loom.db") // the sessions' database may hold them too
	key := credential.GenerateKey()
	svc, err := sqlcredential.NewService(ctx, dsn, key)
	if err != nil {
		log.Fatal(err)
	}
	k := credential.Key{AppName: "cal", UserID: "alice", Name: "calendar"}
	if err := svc.Put(ctx, k, []byte("a token")); err != nil {
		log.Fatal(err)
	}
	again, err := sqlcredential.NewService(ctx, dsn, key)
	if err != nil {
		log.Fatal(err)
	}
	v, err := again.Get(ctx, k)
	fmt.Println(string(v), err)
	// Output:
	// a token <nil>
}
