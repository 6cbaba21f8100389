package memmemory_test

import (
	"testing"

	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/memory/memmemory"
	"github.com/loomkit/loom/memory/memorytest"
)

func TestConformance(t *testing.T) {
	memorytest.Run(t, func(t *testing.T) memory.Store { return memmemory.New() })
}
