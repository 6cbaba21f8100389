// Package artifacttest is the conformance suite for artifact.Store
// implementations.
//
// A backend is done when it passes [Run]:
//
//	func TestConformance(t *testing.T) {
//		artifacttest.Run(t, func(t *testing.T) artifact.Store {
//			return mystore.New()
//		})
//	}
//
// The suite drives the store through [artifact.NewService], so it checks the
// behaviour users see: version numbering, the "user:" namespace, listing,
// deletion, exact round trips, isolation of returned memory and concurrent
// saves, removal of single versions and of a session's artifacts. Every subtest gets a fresh store from newStore and closes it.
package artifacttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/artifact"
)

const (
	app   = "app"
	user  = "alice"
	sess1 = "s1"
	sess2 = "s2"
)

func ref(session, name string) artifact.Ref {
	return artifact.Ref{AppName: app, UserID: user, SessionID: session, Name: name}
}

// Run runs the conformance suite against stores made by newStore. newStore
// is called once per subtest and must return an empty store.
func Run(t *testing.T, newStore func(t *testing.T) artifact.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, *artifact.Service)
	}{
		{"Versions", testVersions},
		{"NotFound", testNotFound},
		{"UserNamespace", testUserNamespace},
		{"SessionIsolation", testSessionIsolation},
		{"List", testList},
		{"Delete", testDelete},
		{"DeleteKeepsSimilarNames", testDeleteSimilarNames},
		{"DeleteVersion", testDeleteVersion},
		{"DeleteSession", testDeleteSession},
		{"RoundTrip", testRoundTrip},
		{"Names", testNames},
		{"Identifiers", testIdentifiers},
		{"ConcurrentSaves", testConcurrentSaves},
		{"NoSharedMemory", testNoSharedMemory},
		{"InvalidNames", testInvalid},
		{"InvalidUTF8", testInvalidUTF8},
		{"CancelledContext", testCancelled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := newStore(t)
			svc := artifact.NewService(store)
			t.Cleanup(func() {
				if err := svc.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, svc)
		})
	}
}

func save(t *testing.T, svc *artifact.Service, r artifact.Ref, p *genai.Part) int64 {
	t.Helper()
	v, err := svc.Save(t.Context(), r, p)
	if err != nil {
		t.Fatalf("Save(%q): %v", r.Name, err)
	}
	return v
}

func load(t *testing.T, svc *artifact.Service, r artifact.Ref, version int64) *genai.Part {
	t.Helper()
	p, err := svc.Load(t.Context(), r, version)
	if err != nil {
		t.Fatalf("Load(%q, %d): %v", r.Name, version, err)
	}
	if p == nil {
		t.Fatalf("Load(%q, %d) returned a nil part", r.Name, version)
	}
	return p
}

func list(t *testing.T, svc *artifact.Service, user, session string) []string {
	t.Helper()
	names, err := svc.List(t.Context(), app, user, session)
	if err != nil {
		t.Fatalf("List(%q, %q): %v", user, session, err)
	}
	return names
}

func wantText(t *testing.T, p *genai.Part, want string) {
	t.Helper()
	if p.Text != want {
		t.Errorf("text = %q, want %q", p.Text, want)
	}
}

func wantNotFound(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, artifact.ErrNotFound) {
		t.Errorf("%s: err = %v, want artifact.ErrNotFound", what, err)
	}
}

func testVersions(t *testing.T, svc *artifact.Service) {
	r := ref(sess1, "notes.txt")
	for i := range 3 {
		if v := save(t, svc, r, genai.NewPartFromText(fmt.Sprint("v", i))); v != int64(i) {
			t.Fatalf("save %d returned version %d, want %d", i, v, i)
		}
	}
	wantText(t, load(t, svc, r, artifact.Latest), "v2")
	for i := range 3 {
		wantText(t, load(t, svc, r, int64(i)), fmt.Sprint("v", i))
	}
	vs, err := svc.Versions(t.Context(), r)
	if err != nil {
		t.Fatalf("Versions: %v", err)
	}
	if !slices.Equal(vs, []int64{0, 1, 2}) {
		t.Errorf("Versions = %v, want [0 1 2]", vs)
	}
	// Another name starts its own numbering.
	if v := save(t, svc, ref(sess1, "other.txt"), genai.NewPartFromText("x")); v != 0 {
		t.Errorf("first save of another name returned version %d, want 0", v)
	}
}

func testNotFound(t *testing.T, svc *artifact.Service) {
	ctx := t.Context()
	_, err := svc.Load(ctx, ref(sess1, "missing.txt"), artifact.Latest)
	wantNotFound(t, err, "Load missing latest")
	_, err = svc.Load(ctx, ref(sess1, "missing.txt"), 0)
	wantNotFound(t, err, "Load missing version 0")
	_, err = svc.Versions(ctx, ref(sess1, "missing.txt"))
	wantNotFound(t, err, "Versions missing")
	_, err = svc.Load(ctx, ref(sess1, "user:missing"), artifact.Latest)
	wantNotFound(t, err, "Load missing user artifact")

	r := ref(sess1, "present.txt")
	save(t, svc, r, genai.NewPartFromText("a"))
	save(t, svc, r, genai.NewPartFromText("b"))
	_, err = svc.Load(ctx, r, 2)
	wantNotFound(t, err, "Load version past the latest")
	_, err = svc.Load(ctx, r, 1000)
	wantNotFound(t, err, "Load version 1000")
	if names := list(t, svc, "nobody", "none"); len(names) != 0 {
		t.Errorf("List of an empty session = %q, want none", names)
	}
}

func testUserNamespace(t *testing.T, svc *artifact.Service) {
	ctx := t.Context()
	r := ref(sess1, "user:profile.json")
	if v := save(t, svc, r, genai.NewPartFromText("p0")); v != 0 {
		t.Fatalf("first save = %d, want 0", v)
	}
	// Another session of the same user sees it and continues its versions.
	r2 := ref(sess2, "user:profile.json")
	wantText(t, load(t, svc, r2, artifact.Latest), "p0")
	if v := save(t, svc, r2, genai.NewPartFromText("p1")); v != 1 {
		t.Errorf("save from another session = %d, want 1", v)
	}
	wantText(t, load(t, svc, r, artifact.Latest), "p1")

	// Another user of the same app and the same user in another app do not.
	other := artifact.Ref{AppName: app, UserID: "bob", SessionID: sess1, Name: "user:profile.json"}
	_, err := svc.Load(ctx, other, artifact.Latest)
	wantNotFound(t, err, "Load another user's user: artifact")
	otherApp := artifact.Ref{AppName: "app2", UserID: user, SessionID: sess1, Name: "user:profile.json"}
	_, err = svc.Load(ctx, otherApp, artifact.Latest)
	wantNotFound(t, err, "Load user: artifact from another app")
	if names := list(t, svc, "bob", sess1); len(names) != 0 {
		t.Errorf("List for another user = %q, want none", names)
	}
	// The other user's namespace numbers independently.
	if v := save(t, svc, other, genai.NewPartFromText("bob")); v != 0 {
		t.Errorf("other user's first save = %d, want 0", v)
	}
	wantText(t, load(t, svc, r, artifact.Latest), "p1")

	// Listing with no session shows only the user's shared names.
	names, err := svc.List(ctx, app, user, "")
	if err != nil {
		t.Fatalf("List without session: %v", err)
	}
	if !slices.Equal(names, []string{"user:profile.json"}) {
		t.Errorf("List without session = %q, want [user:profile.json]", names)
	}
}

func testSessionIsolation(t *testing.T, svc *artifact.Service) {
	ctx := t.Context()
	save(t, svc, ref(sess1, "notes.txt"), genai.NewPartFromText("one"))
	_, err := svc.Load(ctx, ref(sess2, "notes.txt"), artifact.Latest)
	wantNotFound(t, err, "Load another session's artifact")
	if v := save(t, svc, ref(sess2, "notes.txt"), genai.NewPartFromText("two")); v != 0 {
		t.Errorf("same name in another session got version %d, want 0", v)
	}
	wantText(t, load(t, svc, ref(sess1, "notes.txt"), artifact.Latest), "one")
	wantText(t, load(t, svc, ref(sess2, "notes.txt"), artifact.Latest), "two")

	// Same session id under another user or app is a different session.
	for _, r := range []artifact.Ref{
		{AppName: app, UserID: "bob", SessionID: sess1, Name: "notes.txt"},
		{AppName: "app2", UserID: user, SessionID: sess1, Name: "notes.txt"},
	} {
		_, err := svc.Load(ctx, r, artifact.Latest)
		wantNotFound(t, err, fmt.Sprintf("Load from %s/%s", r.AppName, r.UserID))
	}
}

func testList(t *testing.T, svc *artifact.Service) {
	for _, n := range []string{"zeta.txt", "alpha.txt", "user:shared.md", "mid/dle.txt"} {
		save(t, svc, ref(sess1, n), genai.NewPartFromText(n))
	}
	save(t, svc, ref(sess1, "alpha.txt"), genai.NewPartFromText("again"))
	save(t, svc, ref(sess2, "beta.txt"), genai.NewPartFromText("b"))
	save(t, svc, ref(sess2, "user:another.md"), genai.NewPartFromText("u"))

	want1 := []string{"alpha.txt", "mid/dle.txt", "user:another.md", "user:shared.md", "zeta.txt"}
	if got := list(t, svc, user, sess1); !slices.Equal(got, want1) {
		t.Errorf("List(s1) = %q, want %q", got, want1)
	}
	want2 := []string{"beta.txt", "user:another.md", "user:shared.md"}
	if got := list(t, svc, user, sess2); !slices.Equal(got, want2) {
		t.Errorf("List(s2) = %q, want %q", got, want2)
	}
	want3 := []string{"user:another.md", "user:shared.md"}
	if got := list(t, svc, user, "s3"); !slices.Equal(got, want3) {
		t.Errorf("List(s3) = %q, want %q", got, want3)
	}
}

func testDelete(t *testing.T, svc *artifact.Service) {
	ctx := t.Context()
	r := ref(sess1, "gone.txt")
	save(t, svc, r, genai.NewPartFromText("a"))
	save(t, svc, r, genai.NewPartFromText("b"))
	keep := ref(sess1, "kept.txt")
	save(t, svc, keep, genai.NewPartFromText("k"))
	if err := svc.Delete(ctx, r); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	_, err := svc.Load(ctx, r, artifact.Latest)
	wantNotFound(t, err, "Load after Delete")
	_, err = svc.Load(ctx, r, 0)
	wantNotFound(t, err, "Load version 0 after Delete")
	_, err = svc.Versions(ctx, r)
	wantNotFound(t, err, "Versions after Delete")
	if got := list(t, svc, user, sess1); !slices.Equal(got, []string{"kept.txt"}) {
		t.Errorf("List after Delete = %q, want [kept.txt]", got)
	}
	wantText(t, load(t, svc, keep, artifact.Latest), "k")

	// Deleting a missing artifact, or deleting twice, is fine.
	if err := svc.Delete(ctx, r); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	if err := svc.Delete(ctx, ref("never", "never.txt")); err != nil {
		t.Errorf("Delete of a missing artifact: %v", err)
	}

	// A deleted name starts again at version 0.
	if v := save(t, svc, r, genai.NewPartFromText("new")); v != 0 {
		t.Errorf("save after Delete = %d, want 0", v)
	}
	wantText(t, load(t, svc, r, artifact.Latest), "new")

	// A user: artifact can be deleted from any session of the user.
	u := ref(sess1, "user:u.txt")
	save(t, svc, u, genai.NewPartFromText("u"))
	if err := svc.Delete(ctx, ref(sess2, "user:u.txt")); err != nil {
		t.Fatalf("Delete user artifact: %v", err)
	}
	_, err = svc.Load(ctx, u, artifact.Latest)
	wantNotFound(t, err, "Load user artifact after Delete")
}

// testDeleteSimilarNames guards prefix-based backends: deleting "report"
// must not touch names that merely start with it.
func testDeleteSimilarNames(t *testing.T, svc *artifact.Service) {
	names := []string{"report", "report2", "report.txt", "report/x", "report/x/y", "repor"}
	for _, n := range names {
		save(t, svc, ref(sess1, n), genai.NewPartFromText(n))
	}
	if err := svc.Delete(t.Context(), ref(sess1, "report")); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	want := []string{"repor", "report.txt", "report/x", "report/x/y", "report2"}
	if got := list(t, svc, user, sess1); !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
	for _, n := range want {
		wantText(t, load(t, svc, ref(sess1, n), artifact.Latest), n)
		vs, err := svc.Versions(t.Context(), ref(sess1, n))
		if err != nil || !slices.Equal(vs, []int64{0}) {
			t.Errorf("Versions(%q) = %v, %v; want [0]", n, vs, err)
		}
	}
}

func versions(t *testing.T, svc *artifact.Service, r artifact.Ref) []int64 {
	t.Helper()
	vs, err := svc.Versions(t.Context(), r)
	if err != nil {
		t.Fatalf("Versions(%q): %v", r.Name, err)
	}
	return vs
}

// testDeleteVersion removes single versions: a middle one leaves a gap, the
// latest one gives its number to the next save, the last one removes the
// artifact.
func testDeleteVersion(t *testing.T, svc *artifact.Service) {
	ctx := t.Context()
	r := ref(sess1, "draft.txt")
	for i := range 4 {
		save(t, svc, r, genai.NewPartFromText(fmt.Sprint("v", i)))
	}
	if err := svc.DeleteVersion(ctx, r, 1); err != nil {
		t.Fatalf("DeleteVersion(1): %v", err)
	}
	if got := versions(t, svc, r); !slices.Equal(got, []int64{0, 2, 3}) {
		t.Errorf("Versions after deleting 1 = %v, want [0 2 3]", got)
	}
	_, err := svc.Load(ctx, r, 1)
	wantNotFound(t, err, "Load of a deleted version")
	wantText(t, load(t, svc, r, 2), "v2")

	// The latest goes: Latest is the one before, and its number is reused.
	if err := svc.DeleteVersion(ctx, r, 3); err != nil {
		t.Fatalf("DeleteVersion(3): %v", err)
	}
	wantText(t, load(t, svc, r, artifact.Latest), "v2")
	if v := save(t, svc, r, genai.NewPartFromText("again")); v != 3 {
		t.Errorf("save after deleting the latest = version %d, want 3", v)
	}
	wantText(t, load(t, svc, r, artifact.Latest), "again")

	// Missing versions and artifacts are not an error; negative versions are.
	for _, v := range []int64{1, 99} {
		if err := svc.DeleteVersion(ctx, r, v); err != nil {
			t.Errorf("DeleteVersion(%d) of a missing version: %v", v, err)
		}
	}
	if err := svc.DeleteVersion(ctx, ref(sess1, "never.txt"), 0); err != nil {
		t.Errorf("DeleteVersion of a missing artifact: %v", err)
	}
	if err := svc.DeleteVersion(ctx, r, artifact.Latest); !errors.Is(err, artifact.ErrInvalid) {
		t.Errorf("DeleteVersion(Latest): err = %v, want artifact.ErrInvalid", err)
	}

	// Removing every version removes the artifact.
	for _, v := range []int64{0, 2, 3} {
		if err := svc.DeleteVersion(ctx, r, v); err != nil {
			t.Fatalf("DeleteVersion(%d): %v", v, err)
		}
	}
	_, err = svc.Versions(ctx, r)
	wantNotFound(t, err, "Versions after deleting every version")
	_, err = svc.Load(ctx, r, artifact.Latest)
	wantNotFound(t, err, "Load after deleting every version")
	if got := list(t, svc, user, sess1); len(got) != 0 {
		t.Errorf("List after deleting every version = %q, want none", got)
	}
	if v := save(t, svc, r, genai.NewPartFromText("fresh")); v != 0 {
		t.Errorf("save after deleting every version = %d, want 0", v)
	}

	// A user: version can be removed from any session of the user.
	u := ref(sess1, "user:u.txt")
	save(t, svc, u, genai.NewPartFromText("u0"))
	save(t, svc, u, genai.NewPartFromText("u1"))
	if err := svc.DeleteVersion(ctx, ref(sess2, "user:u.txt"), 1); err != nil {
		t.Fatalf("DeleteVersion of a user artifact: %v", err)
	}
	wantText(t, load(t, svc, u, artifact.Latest), "u0")
}

// testDeleteSession removes one session's artifacts and nothing else: not
// the user's shared ones, not other sessions' (also those whose ids start
// alike), not other users' or apps'. The same session id then starts empty.
func testDeleteSession(t *testing.T, svc *artifact.Service) {
	ctx := t.Context()
	gone := []string{"a.txt", "dir/b.txt", strings.Repeat("long/", 60)}
	for _, n := range gone {
		save(t, svc, ref(sess1, n), genai.NewPartFromText(n))
		save(t, svc, ref(sess1, n), genai.NewPartFromText(n+" again"))
	}
	save(t, svc, ref(sess1, "user:shared.txt"), genai.NewPartFromText("shared"))
	kept := []artifact.Ref{
		ref(sess2, "a.txt"),
		ref(sess1+"0", "a.txt"),
		ref(sess1+"/x", "a.txt"),
		{AppName: app, UserID: "bob", SessionID: sess1, Name: "a.txt"},
		{AppName: "app2", UserID: user, SessionID: sess1, Name: "a.txt"},
	}
	for i, r := range kept {
		save(t, svc, r, genai.NewPartFromText(fmt.Sprint("kept ", i)))
	}

	if err := svc.DeleteSession(ctx, app, user, sess1); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	if got := list(t, svc, user, sess1); !slices.Equal(got, []string{"user:shared.txt"}) {
		t.Errorf("List after DeleteSession = %q, want only [user:shared.txt]", got)
	}
	for _, n := range gone {
		_, err := svc.Load(ctx, ref(sess1, n), artifact.Latest)
		wantNotFound(t, err, "Load after DeleteSession")
		_, err = svc.Versions(ctx, ref(sess1, n))
		wantNotFound(t, err, "Versions after DeleteSession")
	}
	wantText(t, load(t, svc, ref(sess2, "user:shared.txt"), artifact.Latest), "shared")
	for i, r := range kept {
		wantText(t, load(t, svc, r, artifact.Latest), fmt.Sprint("kept ", i))
	}

	// A new session with the same id starts from nothing.
	if v := save(t, svc, ref(sess1, "a.txt"), genai.NewPartFromText("new")); v != 0 {
		t.Errorf("first save in the recreated session = version %d, want 0", v)
	}
	if got := versions(t, svc, ref(sess1, "a.txt")); !slices.Equal(got, []int64{0}) {
		t.Errorf("Versions in the recreated session = %v, want [0]", got)
	}

	// Deleting twice, or a session that never had artifacts, is fine; the
	// ids are required.
	for _, s := range []string{"never", sess2 + "-none"} {
		if err := svc.DeleteSession(ctx, app, user, s); err != nil {
			t.Errorf("DeleteSession(%q): %v", s, err)
		}
	}
	if err := svc.DeleteSession(ctx, "unknown-app", "nobody", "none"); err != nil {
		t.Errorf("DeleteSession of an unknown user: %v", err)
	}
	for _, ids := range [][3]string{{"", user, sess1}, {app, "", sess1}, {app, user, ""}} {
		if err := svc.DeleteSession(ctx, ids[0], ids[1], ids[2]); !errors.Is(err, artifact.ErrInvalid) {
			t.Errorf("DeleteSession(%q): err = %v, want artifact.ErrInvalid", ids, err)
		}
	}
	wantText(t, load(t, svc, ref(sess2, "a.txt"), artifact.Latest), "kept 0")
}

func allBytes() []byte {
	b := make([]byte, 0, 512)
	for i := range 512 {
		b = append(b, byte(i*7))
	}
	return append(b, "\n\r\n\x00{}\"end"...)
}

func testRoundTrip(t *testing.T, svc *artifact.Service) {
	cases := []struct {
		name string
		part *genai.Part
	}{
		{"text.txt", genai.NewPartFromText("line one\nline two\t✓ ünïcødé \x00 \"quoted\" {json}")},
		{"image.png", &genai.Part{InlineData: &genai.Blob{MIMEType: "image/png", Data: allBytes()}}},
		{"named.bin", &genai.Part{InlineData: &genai.Blob{MIMEType: "application/octet-stream", Data: []byte{0, 1, 2}, DisplayName: "blob name"}}},
		{"empty.bin", &genai.Part{InlineData: &genai.Blob{MIMEType: "application/x-empty", Data: []byte{}}}},
		{"remote.pdf", &genai.Part{FileData: &genai.FileData{FileURI: "gs://bucket/doc.pdf", MIMEType: "application/pdf", DisplayName: "doc"}}},
		{"newline.txt", genai.NewPartFromText("\n")},
	}
	for _, c := range cases {
		r := ref(sess1, c.name)
		save(t, svc, r, c.part)
		save(t, svc, r, c.part)
		for _, v := range []int64{artifact.Latest, 0, 1} {
			got := load(t, svc, r, v)
			equalPart(t, c.name, got, c.part)
		}
	}
}

func equalPart(t *testing.T, name string, got, want *genai.Part) {
	t.Helper()
	if got.Text != want.Text {
		t.Errorf("%s: text = %q, want %q", name, got.Text, want.Text)
	}
	switch {
	case (got.InlineData == nil) != (want.InlineData == nil):
		t.Errorf("%s: inline data = %+v, want %+v", name, got.InlineData, want.InlineData)
	case want.InlineData != nil:
		g, w := got.InlineData, want.InlineData
		if !bytes.Equal(g.Data, w.Data) || g.MIMEType != w.MIMEType || g.DisplayName != w.DisplayName {
			t.Errorf("%s: inline data = {%q %q %d bytes}, want {%q %q %d bytes}",
				name, g.MIMEType, g.DisplayName, len(g.Data), w.MIMEType, w.DisplayName, len(w.Data))
		}
	}
	switch {
	case (got.FileData == nil) != (want.FileData == nil):
		t.Errorf("%s: file data = %+v, want %+v", name, got.FileData, want.FileData)
	case want.FileData != nil && *got.FileData != *want.FileData:
		t.Errorf("%s: file data = %+v, want %+v", name, *got.FileData, *want.FileData)
	}
}

// testNames checks that names are stored exactly: case, unicode, slashes,
// characters a backend might use for escaping, and long names.
func testNames(t *testing.T, svc *artifact.Service) {
	names := []string{
		"UPPER.txt", "upper.txt", "Upper.TXT",
		"a/b", "a%2Fb", "a%2fb", "a_b", "a b", "a+b", "a~b",
		"dir/sub/file name.txt", "Ünïcødé ✓.md", ".hidden", "trailing.", "x:y",
		"user:dir/file.txt", "user:", "_user", "%", "~",
		strings.Repeat("long-name/", 50),
	}
	for _, n := range names {
		if v := save(t, svc, ref(sess1, n), genai.NewPartFromText("content of "+n)); v != 0 {
			t.Errorf("Save(%q) = version %d, want 0 (names must not collide)", n, v)
		}
	}
	for _, n := range names {
		wantText(t, load(t, svc, ref(sess1, n), artifact.Latest), "content of "+n)
	}
	want := slices.Sorted(slices.Values(names))
	if got := list(t, svc, user, sess1); !slices.Equal(got, want) {
		t.Errorf("List = %q\nwant %q", got, want)
	}
}

// testIdentifiers checks that app, user and session ids are kept apart even
// when they contain separators or path elements.
func testIdentifiers(t *testing.T, svc *artifact.Service) {
	refs := []artifact.Ref{
		{AppName: "a", UserID: "u", SessionID: "s/x", Name: "f"},
		{AppName: "a", UserID: "u", SessionID: "s", Name: "x/f"},
		{AppName: "a", UserID: "u/s", SessionID: "x", Name: "f"},
		{AppName: "a/u", UserID: "s", SessionID: "x", Name: "f"},
		{AppName: "a", UserID: "..", SessionID: "..", Name: "f"},
		{AppName: "..", UserID: ".", SessionID: ".", Name: "f"},
		{AppName: "a", UserID: "../../escape", SessionID: "/etc", Name: "f"},
		{AppName: "a", UserID: "U", SessionID: "S", Name: "f"},
		{AppName: "a", UserID: "u", SessionID: "_user", Name: "f"},
		{AppName: "a", UserID: "u", SessionID: "user", Name: "f"},
		{AppName: "a", UserID: "u", SessionID: "x", Name: "user:f"},
	}
	for i, r := range refs {
		if v := save(t, svc, r, genai.NewPartFromText(fmt.Sprint(i))); v != 0 {
			t.Errorf("Save(%+v) = version %d, want 0 (keys must not collide)", r, v)
		}
	}
	for i, r := range refs {
		wantText(t, load(t, svc, r, artifact.Latest), fmt.Sprint(i))
		names, err := svc.List(t.Context(), r.AppName, r.UserID, r.SessionID)
		if err != nil {
			t.Fatalf("List(%+v): %v", r, err)
		}
		if !slices.Contains(names, r.Name) {
			t.Errorf("List(%q, %q, %q) = %q, want it to contain %q", r.AppName, r.UserID, r.SessionID, names, r.Name)
		}
	}
	// Only the user-scoped artifact of (a, u) is visible from a fresh session.
	names, err := svc.List(t.Context(), "a", "u", "fresh")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if !slices.Equal(names, []string{"user:f"}) {
		t.Errorf("List(a, u, fresh) = %q, want [user:f]", names)
	}
}

func testConcurrentSaves(t *testing.T, svc *artifact.Service) {
	const workers, each = 8, 4
	r := ref(sess1, "contended.txt")
	var (
		mu    sync.Mutex
		saved = map[int64]string{}
		wg    sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				text := fmt.Sprintf("w%d-%d", w, i)
				v, err := svc.Save(context.Background(), r, genai.NewPartFromText(text))
				if err != nil {
					t.Errorf("Save: %v", err)
					return
				}
				mu.Lock()
				if prev, dup := saved[v]; dup {
					t.Errorf("version %d returned to both %q and %q", v, prev, text)
				}
				saved[v] = text
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	vs, err := svc.Versions(t.Context(), r)
	if err != nil {
		t.Fatalf("Versions: %v", err)
	}
	want := make([]int64, workers*each)
	for i := range want {
		want[i] = int64(i)
	}
	if !slices.Equal(vs, want) {
		t.Fatalf("Versions = %v, want %v", vs, want)
	}
	for v, text := range saved {
		wantText(t, load(t, svc, r, v), text)
	}
}

func testNoSharedMemory(t *testing.T, svc *artifact.Service) {
	r := ref(sess1, "data.bin")
	data := []byte("original")
	in := &genai.Part{InlineData: &genai.Blob{MIMEType: "text/plain", Data: data}}
	save(t, svc, r, in)
	// Changing what was saved does not change what is stored.
	data[0] = 'X'
	in.InlineData.MIMEType = "changed/in"
	got := load(t, svc, r, artifact.Latest)
	if string(got.InlineData.Data) != "original" || got.InlineData.MIMEType != "text/plain" {
		t.Fatalf("stored part changed with the caller's: %q %q", got.InlineData.Data, got.InlineData.MIMEType)
	}
	// Changing what was loaded does not change what is stored.
	got.InlineData.Data[0] = 'Y'
	got.InlineData.MIMEType = "changed/out"
	again := load(t, svc, r, 0)
	if string(again.InlineData.Data) != "original" || again.InlineData.MIMEType != "text/plain" {
		t.Errorf("stored part changed with a loaded copy: %q %q", again.InlineData.Data, again.InlineData.MIMEType)
	}
	// Two loads do not share memory either.
	a, b := load(t, svc, r, artifact.Latest), load(t, svc, r, artifact.Latest)
	a.InlineData.Data[1] = 'Z'
	if string(b.InlineData.Data) != "original" {
		t.Errorf("two loads share memory: %q", b.InlineData.Data)
	}
}

func testInvalid(t *testing.T, svc *artifact.Service) {
	ctx := t.Context()
	p := genai.NewPartFromText("x")
	for _, name := range []string{"", "../x", "/abs", "a/../../b", "a/./b", `a\b`, "..", "nul\x00"} {
		r := ref(sess1, name)
		if _, err := svc.Save(ctx, r, p); !errors.Is(err, artifact.ErrInvalid) {
			t.Errorf("Save(%q): err = %v, want artifact.ErrInvalid", name, err)
		}
		if _, err := svc.Load(ctx, r, artifact.Latest); !errors.Is(err, artifact.ErrInvalid) {
			t.Errorf("Load(%q): err = %v, want artifact.ErrInvalid", name, err)
		}
		if err := svc.Delete(ctx, r); !errors.Is(err, artifact.ErrInvalid) {
			t.Errorf("Delete(%q): err = %v, want artifact.ErrInvalid", name, err)
		}
		if _, err := svc.Versions(ctx, r); !errors.Is(err, artifact.ErrInvalid) {
			t.Errorf("Versions(%q): err = %v, want artifact.ErrInvalid", name, err)
		}
	}
	bad := []artifact.Ref{
		{AppName: "", UserID: user, SessionID: sess1, Name: "f"},
		{AppName: app, UserID: "", SessionID: sess1, Name: "f"},
		{AppName: app, UserID: user, SessionID: "", Name: "f"},
	}
	for _, r := range bad {
		if _, err := svc.Save(ctx, r, p); !errors.Is(err, artifact.ErrInvalid) {
			t.Errorf("Save(%+v): err = %v, want artifact.ErrInvalid", r, err)
		}
	}
	for _, part := range []*genai.Part{nil, {}} {
		if _, err := svc.Save(ctx, ref(sess1, "empty"), part); !errors.Is(err, artifact.ErrInvalid) {
			t.Errorf("Save(%v): err = %v, want artifact.ErrInvalid", part, err)
		}
	}
	if names := list(t, svc, user, sess1); len(names) != 0 {
		t.Errorf("invalid saves stored something: %q", names)
	}
}

// testInvalidUTF8: names, ids and text that are not valid UTF-8 are refused
// with ErrInvalid (a store would list or return them changed); every name a
// listing returns loads, and valid non-ASCII text comes back as it was.
func testInvalidUTF8(t *testing.T, svc *artifact.Service) {
	ctx := t.Context()
	for _, name := range []string{"bad\xff.txt", "\xc3(", "user:\xfe", "dir/\xff/x"} {
		if _, err := svc.Save(ctx, ref(sess1, name), genai.NewPartFromText("x")); !errors.Is(err, artifact.ErrInvalid) {
			t.Errorf("Save(%q): err = %v, want artifact.ErrInvalid", name, err)
		}
	}
	for _, r := range []artifact.Ref{
		{AppName: "a\xff", UserID: user, SessionID: sess1, Name: "f"},
		{AppName: app, UserID: "u\xff", SessionID: sess1, Name: "f"},
		{AppName: app, UserID: user, SessionID: "s\x00", Name: "f"},
	} {
		if _, err := svc.Save(ctx, r, genai.NewPartFromText("x")); !errors.Is(err, artifact.ErrInvalid) {
			t.Errorf("Save(%+v): err = %v, want artifact.ErrInvalid", r, err)
		}
	}
	for _, p := range []*genai.Part{
		genai.NewPartFromText("a\xffb"),
		{InlineData: &genai.Blob{MIMEType: "text/\xff", Data: []byte{0xff}}},
		{FileData: &genai.FileData{FileURI: "gs://b/\xff", MIMEType: "text/plain"}},
	} {
		if _, err := svc.Save(ctx, ref(sess1, "text.txt"), p); !errors.Is(err, artifact.ErrInvalid) {
			t.Errorf("Save(%v): err = %v, want artifact.ErrInvalid", p, err)
		}
	}
	save(t, svc, ref(sess1, "ünï 🙂.txt"), genai.NewPartFromText("ünï 🙂 \u2028"))
	save(t, svc, ref(sess1, "bytes.bin"), &genai.Part{InlineData: &genai.Blob{MIMEType: "application/octet-stream", Data: []byte{0xff, 0}}})
	names := list(t, svc, user, sess1)
	if !slices.Equal(names, []string{"bytes.bin", "ünï 🙂.txt"}) {
		t.Errorf("List = %q, want [bytes.bin ünï 🙂.txt]", names)
	}
	for _, n := range names {
		load(t, svc, ref(sess1, n), artifact.Latest)
	}
	wantText(t, load(t, svc, ref(sess1, "ünï 🙂.txt"), artifact.Latest), "ünï 🙂 \u2028")
}

func testCancelled(t *testing.T, svc *artifact.Service) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := ref(sess1, "cancelled.txt")
	if _, err := svc.Save(ctx, r, genai.NewPartFromText("x")); err == nil {
		t.Errorf("Save with a cancelled context succeeded")
	}
	_, err := svc.Load(t.Context(), r, artifact.Latest)
	wantNotFound(t, err, "Load after a cancelled Save")
}
