package cli_test

import (
	"strings"
	"testing"
)

// TestCloudBucketWithoutDriver: a cloud bucket URL this binary has no
// driver for is refused with a hint about the cloud build tag.
func TestCloudBucketWithoutDriver(t *testing.T) {
	code, _, stderr := run(t, "", "api", "--port", "0", "--sessions", "memory://", "--artifacts", "s3://bucket?region=us-east-1")
	if code == 0 || !strings.Contains(stderr, "-tags cloud") {
		t.Fatalf("exit %d, stderr %q: want a failure that names the cloud build tag", code, stderr)
	}
}
