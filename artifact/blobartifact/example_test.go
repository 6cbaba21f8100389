package blobartifact_test

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/blobartifact"
)

func ExampleOpen() {
	ctx := context.Background()
	// Any gocloud.dev/blob URL works once its driver is linked, for example
	// "s3://bucket?region=eu-west-1&prefix=loom/" with gocloud.dev/blob/s3blob.
	store, err := blobartifact.Open(ctx, "mem://")
	if err != nil {
		fmt.Println(err)
		return
	}
	svc := artifact.NewService(store)
	defer svc.Close()

	ref := artifact.Ref{AppName: "shop", UserID: "alice", SessionID: "s1", Name: "user:profile.md"}
	for _, text := range []string{"# Alice", "# Alice\nLikes tea."} {
		if _, err := svc.Save(ctx, ref, genai.NewPartFromText(text)); err != nil {
			fmt.Println(err)
		}
	}
	versions, _ := svc.Versions(ctx, ref)
	ref.SessionID = "s2" // user: artifacts are shared across sessions
	latest, _ := svc.Load(ctx, ref, artifact.Latest)
	fmt.Printf("versions %v, latest %q\n", versions, latest.Text)
	// Output:
	// versions [0 1], latest "# Alice\nLikes tea."
}
