package cli_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/examples/assistant"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// A program serving its own agents gets loom's subcommands and flags: "web",
// "api", "run APP", "eval", "create", "worker", "conformance",
// "completion", "help" and "version".
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

// A Program adds a registry to the compiled-in apps: the config files of
// apps served from a directory ("loom web DIR") can name what it holds.
// Here "loom run" chats with such an app, whose agent has a Go tool by its
// registered name; without an API key it runs on the offline echo model,
// which repeats the user's message.
func ExampleProgram() {
	dir, _ := os.MkdirTemp("", "apps")
	defer os.RemoveAll(dir)
	_ = os.MkdirAll(filepath.Join(dir, "greeter"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "greeter", "root_agent.yaml"), []byte(`
name: greeter
instruction: Greet the user.
tools:
  - name: greetings.hello
`), 0o644)

	type args struct {
		Name string `json:"name"`
	}
	hello, _ := functiontool.New(functiontool.Config{Name: "hello", Description: "Greets someone."},
		func(_ context.Context, _ tool.Context, a args) (map[string]string, error) {
			return map[string]string{"greeting": "Hello, " + a.Name + "!"}, nil
		})
	p := cli.Program{Registry: agentconfig.NewRegistry().Tool("greetings.hello", hello)}

	env := cli.Env{Stdin: strings.NewReader("Ada\n"), Stdout: os.Stdout, Stderr: io.Discard, Getenv: func(string) string { return "" }}
	code := p.Run(context.Background(), []string{"run", "--sessions", "memory://", "--artifacts", "memory://", filepath.Join(dir, "greeter")}, env)
	fmt.Println("exit code", code)
	// Output:
	// greeter: [offline echo] Ada
	// exit code 0
}

// Env.Name is the name a program's help and completion scripts use (Main
// sets it from os.Args[0]): here the fish completion script of a program
// called helpdesk.
func ExampleEnv_name() {
	env := cli.Env{Name: "helpdesk", Stdin: strings.NewReader(""), Stdout: os.Stdout, Stderr: io.Discard}
	code := cli.Run(context.Background(), []string{"completion", "fish"}, env)
	fmt.Println("exit", code)
	// Output:
	// # fish completion for helpdesk
	// complete -c helpdesk -a '(helpdesk __complete (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
	// exit 0
}
