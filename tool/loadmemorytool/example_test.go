package loadmemorytool_test

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loomkit/loom/tool/loadmemorytool"
)

// The tool declares one required argument, the query; give it to an LLM
// agent whose runner has a memory service.
func ExampleNew() {
	lm, _ := loadmemorytool.New()
	d := lm.Declaration()
	fmt.Println(d.Name, d.ParametersJsonSchema.(*jsonschema.Schema).Required)
	// Output:
	// load_memory [query]
}
