package memcredential_test

import (
	"testing"

	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/credential/credentialtest"
	"github.com/loomkit/loom/credential/memcredential"
)

func TestConformance(t *testing.T) {
	credentialtest.Run(t, func(*testing.T) credential.Store { return memcredential.New() })
}
