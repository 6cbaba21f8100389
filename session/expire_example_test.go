package session_test

import (
	"context"
	"fmt"
	"time"

	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// Expired lists the sessions idle since before a cutoff; DeleteIfIdle
// deletes one after checking again under its lease.
func ExampleService_Expired() {
	ctx := context.Background()
	svc := session.NewService(memsession.New(), &session.Options{
		Now: func() time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) },
	})
	if _, err := svc.Create(ctx, session.Key{AppName: "shop", UserID: "ann", SessionID: "s1"}, nil); err != nil {
		panic(err)
	}
	cutoff := time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)
	for key, err := range svc.Expired(ctx, "shop", cutoff) {
		if err != nil {
			panic(err)
		}
		deleted, err := svc.DeleteIfIdle(ctx, key, cutoff, nil)
		fmt.Println(key.UserID, key.SessionID, deleted, err)
	}
	// Output: ann s1 true <nil>
}
