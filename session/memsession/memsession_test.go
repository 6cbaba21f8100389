package memsession_test

import (
	"testing"

	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/session/sessiontest"
)

func TestConformance(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store {
		st := memsession.New()
		t.Cleanup(func() { st.Close() })
		return st
	})
}

func FuzzAppendStateDelta(f *testing.F) {
	sessiontest.FuzzAppendStateDelta(f, memsession.New())
}
