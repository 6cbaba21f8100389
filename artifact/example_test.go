package artifact_test

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/memartifact"
)

func Example() {
	ctx := context.Background()
	svc := artifact.NewService(memartifact.New())
	defer svc.Close()

	report := artifact.Ref{AppName: "shop", UserID: "alice", SessionID: "s1", Name: "report.txt"}
	v0, _ := svc.Save(ctx, report, genai.NewPartFromText("draft"))
	v1, _ := svc.Save(ctx, report, genai.NewPartFromText("final"))
	fmt.Println("versions saved:", v0, v1)

	latest, _ := svc.Load(ctx, report, artifact.Latest)
	first, _ := svc.Load(ctx, report, 0)
	fmt.Println("latest:", latest.Text, "| first:", first.Text)

	// A "user:" artifact is shared by every session of the user.
	avatar := artifact.Ref{AppName: "shop", UserID: "alice", SessionID: "s1", Name: "user:avatar.png"}
	png := &genai.Part{InlineData: &genai.Blob{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}}
	if _, err := svc.Save(ctx, avatar, png); err != nil {
		fmt.Println(err)
	}
	names, _ := svc.List(ctx, "shop", "alice", "s1")
	fmt.Println("session s1:", names)
	names, _ = svc.List(ctx, "shop", "alice", "s2")
	fmt.Println("session s2:", names)

	avatar.SessionID = "s2"
	p, _ := svc.Load(ctx, avatar, artifact.Latest)
	fmt.Println("avatar from s2:", p.InlineData.MIMEType, len(p.InlineData.Data), "bytes")
	// Output:
	// versions saved: 0 1
	// latest: final | first: draft
	// session s1: [report.txt user:avatar.png]
	// session s2: [user:avatar.png]
	// avatar from s2: image/png 4 bytes
}

func ExampleService_Delete() {
	ctx := context.Background()
	svc := artifact.NewService(memartifact.New())
	ref := artifact.Ref{AppName: "shop", UserID: "alice", SessionID: "s1", Name: "tmp.txt"}
	svc.Save(ctx, ref, genai.NewPartFromText("scratch"))

	if err := svc.Delete(ctx, ref); err != nil {
		fmt.Println(err)
	}
	_, err := svc.Load(ctx, ref, artifact.Latest)
	fmt.Println(err)
	// Output:
	// artifact: load tmp.txt: artifact not found
}

func ExampleValidateName() {
	for _, name := range []string{"notes/today.md", "../secret", "/etc/passwd", ""} {
		fmt.Printf("%q valid: %v\n", name, artifact.ValidateName(name) == nil)
	}
	// Output:
	// "notes/today.md" valid: true
	// "../secret" valid: false
	// "/etc/passwd" valid: false
	// "" valid: false
}
