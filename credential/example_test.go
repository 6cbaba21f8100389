package credential_test

import (
	"context"
	"fmt"
	"log"

	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/credential/memcredential"
)

// A service seals each value under its key for one user of one app; the
// store holds only sealed bytes, and another user's key finds nothing.
func ExampleNewService() {
	ctx := context.Background()
	key, err := credential.ParseKey("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=") // openssl rand -base64 32
	if err != nil {
		log.Fatal(err)
	}
	store := memcredential.New()
	svc, err := credential.NewService(store, key)
	if err != nil {
		log.Fatal(err)
	}
	alice := credential.Key{AppName: "cal", UserID: "alice", Name: "calendar"}
	if err := svc.Put(ctx, alice, []byte(`{"access_token":"at-1"}`)); err != nil {
		log.Fatal(err)
	}
	v, _ := svc.Get(ctx, alice)
	raw, _ := store.Get(ctx, alice)
	_, err = svc.Get(ctx, credential.Key{AppName: "cal", UserID: "bob", Name: "calendar"})
	fmt.Println(string(v))
	fmt.Println(len(raw) > len(v), string(raw) != string(v))
	fmt.Println(err)
	// Output:
	// {"access_token":"at-1"}
	// true true
	// credential: get "calendar": credential: not found: "calendar" of user "bob"
}
