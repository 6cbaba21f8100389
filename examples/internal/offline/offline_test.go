package offline

import (
	"slices"
	"testing"
)

func TestCity(t *testing.T) {
	for text, want := range map[string]string{
		"What's the weather in Lisbon?":          "Lisbon",
		"weather in new york today?":             "New York",
		"Is it sunny in São Paulo right now":     "São Paulo",
		"forecast for Oslo, please.":             "Oslo",
		"what's the weather like":                "Paris",
		"temperature at Zürich":                  "Zürich",
		"how's the weather in  rio de janeiro !": "Rio De Janeiro",
	} {
		if got := City(text, "Paris"); got != want {
			t.Errorf("City(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestNumbers(t *testing.T) {
	if got := Numbers("add 2 and -3.5 and 7", 2); !slices.Equal(got, []float64{2, -3.5}) {
		t.Errorf("Numbers = %v", got)
	}
	if got := Numbers("no numbers", 2); len(got) != 0 {
		t.Errorf("Numbers = %v", got)
	}
}

func TestQuoted(t *testing.T) {
	ins := "Intro.\n\nDraft:\n\"\"\"\nline one\nline two\n\"\"\"\n\nReview:\n\"\"\"\n\n\"\"\""
	if got := Quoted(ins, "Draft"); got != "line one\nline two" {
		t.Errorf("Draft = %q", got)
	}
	if got := Quoted(ins, "Review"); got != "" {
		t.Errorf("empty Review = %q", got)
	}
	if got := Quoted(ins, "Missing"); got != "" {
		t.Errorf("Missing = %q", got)
	}
}
