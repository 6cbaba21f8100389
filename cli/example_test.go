package cli_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/examples/assistant"
)

// A program serving its own agents gets loom's subcommands and flags: "web",
// "api", "run APP" and "version".
func ExampleMain() {
	// In package main:
	//
	//	func main() {
	//		os.Exit(cli.Main(cli.App{Name: "assistant", New: assistant.New, Offline: assistant.Offline}))
	//	}
	_ = cli.Main
}

// Run drives the same command line from code: here "loom run" chats with
// the assistant example, reading the user's lines from a string.
func ExampleRun() {
	app := cli.App{Name: "assistant", New: assistant.New, Offline: assistant.Offline}
	env := cli.Env{
		Stdin:  strings.NewReader("add 2 and 3\n"),
		Stdout: os.Stdout,
		Stderr: io.Discard,
		Getenv: func(string) string { return "" }, // no API keys: the offline model
	}
	code := cli.Run(context.Background(), []string{"run", "--sessions", "memory://", "--artifacts", "memory://", "assistant"}, env, app)
	fmt.Println("exit code", code)
	// Output:
	//   [assistant] → add({"a":2,"b":3})
	//   [assistant] ← add: {"sum":5}
	// assistant: The sum is 5.
	// exit code 0
}
