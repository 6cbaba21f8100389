package agenttool_test

import (
	"context"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
)

// scriptedText is a model that always answers text.
func scriptedText(text string) *scripted.Model {
	return scripted.New("child-model", func(context.Context, *model.Request) (scripted.Turn, error) {
		return scripted.Text(text), nil
	}).Recording()
}

// scriptedSequence plays turns in order; a string is a text turn.
func scriptedSequence(turns ...any) *scripted.Model {
	var ts []scripted.Turn
	for _, t := range turns {
		switch x := t.(type) {
		case string:
			ts = append(ts, scripted.Text(x))
		case scripted.Turn:
			ts = append(ts, x)
		}
	}
	return scripted.NewSequence("parent-model", ts...)
}

func callTurn(name string, args map[string]any) scripted.Turn {
	return scripted.Turn{Calls: []*genai.FunctionCall{{ID: "fc-1", Name: name, Args: args}}}
}
