package mcpserver_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/server/mcpserver"
	"github.com/loomkit/loom/session/memsession"
)

// Serve an application as an MCP server and call its agent with the MCP
// Go SDK's client.
func ExampleNew() {
	greeter, _ := llmagent.New(llmagent.Config{
		Name:        "greeter",
		Description: "Greets people.",
		Model:       scripted.NewSequence("m", scripted.Text("Hello, Ada!")),
	})
	r, _ := runner.New(runner.Config{AppName: "greeter", Agent: greeter, Sessions: memsession.NewService()})

	h, err := mcpserver.New(mcpserver.Config{Runner: r})
	if err != nil {
		panic(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: h.Tool(), Arguments: map[string]any{"request": "Hi, I'm Ada."}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	fmt.Println(res.StructuredContent.(map[string]any)["status"])
	// Output:
	// Hello, Ada!
	// completed
}

// Mount the MCP server in the API server, behind its Authenticate hook:
// each caller's sessions are its own.
func ExampleNew_mounted() {
	greeter, _ := llmagent.New(llmagent.Config{Name: "greeter", Model: scripted.NewSequence("m", scripted.Text("Hello!"))})
	r, _ := runner.New(runner.Config{AppName: "greeter", Agent: greeter, Sessions: memsession.NewService()})
	authenticate := func(req *http.Request) (string, error) {
		if user, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer "); ok && user != "" {
			return user, nil
		}
		return "", errors.New("no bearer token")
	}

	mcpHandler, err := mcpserver.New(mcpserver.Config{Runner: r})
	if err != nil {
		panic(err)
	}
	defer mcpHandler.Close()
	api, err := server.New(server.Config{
		Apps:         []*runner.Runner{r},
		Authenticate: authenticate, // the caller's user, or an error (401)
		Mounts:       map[string]http.Handler{"/mcp/greeter": mcpHandler},
	})
	if err != nil {
		panic(err)
	}
	defer api.Close()

	srv := httptest.NewServer(api)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/mcp/greeter", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	// Output:
	// 401
}
