package model_test

import (
	"fmt"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
)

func ExampleText() {
	c := &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
		{Text: "thinking...", Thought: true}, {Text: "It is sunny."}, {Text: "Enjoy!"}}}
	fmt.Printf("%q %q\n", model.Text(c, ""), model.Text(c, "\n"))
	// Output: "It is sunny.Enjoy!" "It is sunny.\nEnjoy!"
}
