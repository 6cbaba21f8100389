package ui_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestSignInRelayedTwoDeep runs the sign-in card's helpers (static/signin.js)
// with node on a sign-in that an agent tool relays from an agent tool of
// its own: the card finds the innermost credential request, and the answer
// approves each agent tool's request with the next one's answer as payload,
// the credential answer innermost.
func TestSignInRelayedTwoDeep(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is needed to run the UI's modules:", err)
	}
	module := func(name string) string {
		src, err := os.ReadFile("static/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return "data:text/javascript;base64," + base64.StdEncoding.EncodeToString(src)
	}
	signin, err := os.ReadFile("static/signin.js")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(signin), "'./render.js'", "'"+module("render.js")+"'", 1)
	credential := `{"id": "c3", "name": "adk_request_credential", "args": {"authConfig": {"exchangedAuthCredential":
		{"oauth2": {"authUri": "https://auth.example/authorize?state=s1", "state": "s1", "redirectUri": "https://app.example/cb"}}}}}`
	relay := func(id, inner string) string {
		return `{"id": "` + id + `", "name": "adk_request_confirmation", "args": {"toolConfirmation": {"payload": {"agentToolPause": {"waiting": [` + inner + `]}}}}}`
	}
	request := relay("c1", relay("c2", credential))
	script := `import { nestedCredential, answerContent } from 'data:text/javascript;base64,` + base64.StdEncoding.EncodeToString([]byte(src)) + `';
const fc = ` + request + `;
console.log(JSON.stringify({ found: (nestedCredential(fc) || {}).id, answer: answerContent(fc, 'https://app.example/cb?code=k&state=s1') }));`
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", "--input-type=module", "-e", script).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got struct {
		Found  string
		Answer struct {
			Role  string
			Parts []struct {
				FunctionResponse struct {
					ID, Name string
					Response struct {
						Confirmed bool
						Payload   struct {
							Confirmed bool
							Payload   struct {
								ExchangedAuthCredential struct {
									OAuth2 struct{ AuthResponseURI, RedirectURI string } `json:"oauth2"`
								}
							}
						}
					}
				}
			}
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Found != "c3" {
		t.Errorf("found request %q, want the innermost c3", got.Found)
	}
	if len(got.Answer.Parts) != 1 {
		t.Fatalf("answer %s", out)
	}
	fr := got.Answer.Parts[0].FunctionResponse
	o := fr.Response.Payload.Payload.ExchangedAuthCredential.OAuth2
	if fr.ID != "c1" || fr.Name != "adk_request_confirmation" || !fr.Response.Confirmed || !fr.Response.Payload.Confirmed ||
		o.AuthResponseURI != "https://app.example/cb?code=k&state=s1" || o.RedirectURI != "https://app.example/cb" {
		t.Errorf("answer %s", out)
	}
}
