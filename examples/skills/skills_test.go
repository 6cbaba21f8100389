package skills_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/examples/skills"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool/skilltool"
)

// The offline agent loads the skill a request needs, follows it and
// unloads it: one session, two requests, two skills.
func TestOffline(t *testing.T) {
	root, err := skills.New(skills.Offline())
	if err != nil {
		t.Fatal(err)
	}
	svc := session.NewService(memsession.New(), nil)
	r, err := runner.New(runner.Config{AppName: "skills", Agent: root, Sessions: svc, AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ ask, want string }{
		{"what should I pack for a beach trip?", "Pack: swimsuit, sunscreen, towel, sandals."},
		{"convert 10 km to miles", "10 km is 6.21 mi."},
		{"and 3 miles in km?", "3 mi is 4.83 km."},
	} {
		evs, err := r.RunSync(context.Background(), "u", "s", genai.NewContentFromText(tc.ask, genai.RoleUser), nil)
		if err != nil {
			t.Fatal(err)
		}
		var calls []string
		for _, ev := range evs {
			for _, fc := range ev.FunctionCalls() {
				calls = append(calls, fc.Name)
			}
		}
		last := evs[len(evs)-1]
		if got := last.Content.Parts[0].Text; got != tc.want {
			t.Errorf("%q: %q, want %q", tc.ask, got, tc.want)
		}
		if !slices.Contains(calls, skilltool.LoadName) || calls[len(calls)-1] != skilltool.UnloadName {
			t.Errorf("%q: calls %v, want a load and, last, an unload", tc.ask, calls)
		}
	}
	sess, err := svc.Get(context.Background(), session.Key{AppName: "skills", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := sess.Get(skilltool.ActiveStateKey); v != nil && len(v.([]any)) != 0 {
		t.Errorf("active skills at the end: %v, want none", v)
	}
	if sk, _ := skills.Skills(); len(sk) != 2 || !strings.Contains(sk[1].Instructions, "1.609344") {
		t.Errorf("skills %v", sk)
	}
}
