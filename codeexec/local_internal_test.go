package codeexec

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// TestLocalWithoutNamespaces checks the run AllowUnconfined falls back to
// where namespaces are unavailable: the code runs, its files come back, and
// its process group is killed when it returns.
func TestLocalWithoutNamespaces(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	l := &Local{AllowUnconfined: true, AllowNetwork: true}
	py, err := l.interpreter()
	if err != nil {
		t.Skip(err)
	}
	req, before, err := l.request(Input{Code: `
import subprocess
subprocess.Popen(["sleep", "30"])
open("out.txt", "w").write("ok")
print("done")
`})
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.run(context.Background(), py, req, before, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed || res.Stdout != "done\n" || len(res.Files) != 1 || string(res.Files[0].Data) != "ok" {
		t.Fatalf("result = %+v", res)
	}
	if strings.Contains(res.Stderr, "WaitDelay") {
		t.Errorf("stderr = %q", res.Stderr)
	}
}
