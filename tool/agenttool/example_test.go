package agenttool_test

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/agenttool"
)

func Example() {
	// The specialist answers in its own child session; its output key is
	// forwarded to the caller's state.
	translator, err := llmagent.New(llmagent.Config{
		Name:        "translator",
		Description: "Translates English text to French.",
		Model:       scripted.NewSequence("translator-model", scripted.Text("Bonjour le monde")),
		OutputKey:   "translation",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	translate, err := agenttool.New(translator, nil)
	if err != nil {
		fmt.Println(err)
		return
	}

	// The assistant's model calls the translator, then answers with its
	// result.
	assistant, err := llmagent.New(llmagent.Config{
		Name: "assistant",
		Model: scripted.NewSequence("assistant-model",
			scripted.Call("translator", map[string]any{"request": "Hello world"}),
			scripted.Text(`In French: "Bonjour le monde".`),
		),
		Tools: []tool.Tool{translate},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := runner.New(runner.Config{AppName: "demo", Agent: assistant, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	msg := genai.NewContentFromText("Say hello world in French.", genai.RoleUser)
	for ev, err := range r.Run(context.Background(), "u1", "s1", msg, nil) {
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, fr := range ev.FunctionResponses() {
			fmt.Println("tool result:", fr.Response["result"], "| state:", ev.Actions.StateDelta)
		}
		if ev.IsFinalResponse() {
			fmt.Println("answer:", ev.Content.Parts[0].Text)
		}
	}
	// Output:
	// tool result: Bonjour le monde | state: map[translation:Bonjour le monde]
	// answer: In French: "Bonjour le monde".
}
