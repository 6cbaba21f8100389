package reflectretry_test

import (
	"fmt"

	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/plugin/reflectretry"
	"github.com/loomkit/loom/runner"
)

// The plugin is given to a runner like any other: every tool of every agent
// then gets up to two reflected retries per invocation.
func Example() {
	cfg := runner.Config{
		AppName: "app",
		Plugins: []*plugin.Plugin{reflectretry.New(reflectretry.Config{MaxRetries: 2})},
	}
	fmt.Println(cfg.Plugins[0].Name)
	// Output: reflect_retry_tool_plugin
}
