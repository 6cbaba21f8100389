package functiontool_test

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// ExampleMedia returns a chart image with the JSON response.
func ExampleMedia() {
	type ChartArgs struct {
		Title string `json:"title"`
	}
	var pngBytes = []byte("\x89PNG...")
	chart, err := functiontool.New(functiontool.Config{
		Name:        "render_chart",
		Description: "Draws the sales chart.",
	}, func(ctx context.Context, tc tool.Context, args ChartArgs) (functiontool.Media, error) {
		return functiontool.Media{
			Response:  map[string]any{"title": args.Title},
			Parts:     []*genai.Part{genai.NewPartFromBytes(pngBytes, "image/png")},
			Artifacts: nil, // names of session artifacts to attach, e.g. "report.pdf"
		}, nil
	})
	if err != nil {
		panic(err)
	}
	res, parts, err := chart.RunMedia(context.Background(), nil, map[string]any{"title": "Q3"})
	fmt.Println(res["title"], len(parts), parts[0].InlineData.MIMEType, err)
	// Output: Q3 1 image/png <nil>
}
