package fileartifact_test

import (
	"context"
	"fmt"
	"os"

	"google.golang.org/genai"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/fileartifact"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "artifacts")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	store, err := fileartifact.Open(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	svc := artifact.NewService(store)
	defer svc.Close()

	ctx := context.Background()
	ref := artifact.Ref{AppName: "shop", UserID: "alice", SessionID: "s1", Name: "Invoice.csv"}
	part := &genai.Part{InlineData: &genai.Blob{MIMEType: "text/csv", Data: []byte("item,price\ntea,3\n")}}
	v, err := svc.Save(ctx, ref, part)
	if err != nil {
		fmt.Println(err)
		return
	}
	got, _ := svc.Load(ctx, ref, v)
	fmt.Printf("version %d, %s, %q\n", v, got.InlineData.MIMEType, got.InlineData.Data)

	// Every version is one file; names are escaped into one path segment.
	_, err = os.Stat(dir + "/shop/alice/session/s1/%49nvoice.csv/0")
	fmt.Println("file exists:", err == nil)
	// Output:
	// version 0, text/csv, "item,price\ntea,3\n"
	// file exists: true
}
