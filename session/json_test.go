package session_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// referenceJSON encodes sess field by field with encoding/json: what the
// session's JSON must equal.
func referenceJSON(t *testing.T, sess *session.Session) string {
	t.Helper()
	b, err := json.Marshal(struct {
		ID             string         `json:"id"`
		AppName        string         `json:"appName"`
		UserID         string         `json:"userId"`
		State          map[string]any `json:"state"`
		Events         []*event.Event `json:"events"`
		LastUpdateTime event.Seconds  `json:"lastUpdateTime"`
	}{sess.ID(), sess.AppName(), sess.UserID(), sess.State(), append([]*event.Event{}, sess.Events()...), event.Seconds(sess.LastUpdateTime())})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSessionJSON: a session encodes as encoding/json encodes its fields,
// whether it holds its events decoded or encoded, with characters JSON
// escapes in ids, state and events, and with no events.
func TestSessionJSON(t *testing.T) {
	ctx := context.Background()
	svc := memsession.NewService()
	empty, err := svc.Create(ctx, session.Key{AppName: "app", UserID: "u<1>", SessionID: "empty"}, map[string]any{"k": "v & w"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustJSON(t, empty), referenceJSON(t, empty); got != want || !strings.Contains(got, `"events":[]`) {
		t.Fatalf("empty session:\n%s\nwant\n%s", got, want)
	}
	sess, err := svc.Create(ctx, session.Key{AppName: "app", UserID: "u<1>", SessionID: "s"}, map[string]any{"n": 1.5, "html": "<b>"})
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"plain", "<tag> & \u2028 \"quoted\" é", "日本語"} {
		ev := event.NewModelText("e-1", "agent", text)
		ev.Actions.StateDelta = map[string]any{"turn": i}
		if i == 1 {
			ev.LLMCall, ev.CustomMetadata = true, map[string]any{"k": "<v>"}
		}
		if err := svc.AppendEvent(ctx, sess, ev); err != nil {
			t.Fatal(err)
		}
	}
	want := referenceJSON(t, sess)
	if got := mustJSON(t, sess); got != want {
		t.Fatalf("decoded:\n%s\nwant\n%s", got, want)
	}
	read, err := svc.Get(ctx, sess.Key(), nil) // its events kept encoded
	if err != nil {
		t.Fatal(err)
	}
	if got := mustJSON(t, read); got != want {
		t.Fatalf("read back:\n%s\nwant\n%s", got, want)
	}
}

// damagedStore hands back the second stored event of every session
// damaged, as a damaged database would.
type damagedStore struct{ session.Store }

func (s damagedStore) GetSession(ctx context.Context, key session.Key, w session.Window) (*session.Record, error) {
	rec, err := s.Store.GetSession(ctx, key, w)
	if err == nil && len(rec.Raw) > 1 {
		rec.Raw = slices.Clone(rec.Raw) // the store's own stays intact
		rec.Raw[1] = []byte(`{"author":`)
	}
	return rec, err
}

// TestSessionJSONDamagedEvent: an event the store hands back damaged is
// written as unreadable, and the rest of the session as it is; the
// session's JSON stays JSON.
func TestSessionJSONDamagedEvent(t *testing.T) {
	ctx := context.Background()
	svc := session.NewService(damagedStore{memsession.New()}, nil)
	sess, err := svc.Create(ctx, session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"one", "two", "three"} {
		if err := svc.AppendEvent(ctx, sess, event.NewModelText("e-1", "agent", text)); err != nil {
			t.Fatal(err)
		}
	}
	read, err := svc.Get(ctx, sess.Key(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Events []event.Event }
	if err := json.Unmarshal([]byte(mustJSON(t, read)), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 3 || got.Events[0].Text() != "one" || got.Events[1].ErrorCode != "UNREADABLE_EVENT" || got.Events[2].Text() != "three" {
		t.Fatalf("events %+v", got.Events)
	}
}

func mustJSON(t *testing.T, sess *session.Session) string {
	t.Helper()
	b, err := sess.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatalf("invalid JSON: %s", b)
	}
	return string(b)
}
