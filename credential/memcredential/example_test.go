package memcredential_test

import (
	"context"
	"fmt"
	"log"

	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/credential/memcredential"
)

// A service in memory, under a key of the process: what a runner uses
// when credentials need not outlive it.
func ExampleNewService() {
	svc, err := memcredential.NewService(credential.GenerateKey())
	if err != nil {
		log.Fatal(err)
	}
	k := credential.Key{AppName: "cal", UserID: "alice", Name: "calendar"}
	_ = svc.Put(context.Background(), k, []byte("a token"))
	v, err := svc.Get(context.Background(), k)
	fmt.Println(string(v), err)
	// Output:
	// a token <nil>
}
