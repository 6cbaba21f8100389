package memartifact_test

import (
	"testing"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/artifacttest"
	"github.com/loomkit/loom/artifact/memartifact"
)

func TestConformance(t *testing.T) {
	artifacttest.Run(t, func(t *testing.T) artifact.Store { return memartifact.New() })
}
