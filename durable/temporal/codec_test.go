package temporal_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"

	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/event"
)

// TestD13HistoryHoldsNothingInClear: a turn on Temporal whose message
// carries a secret (an API key pasted as the answer) and whose client has a
// feed listener (a per-turn token in the message) → the raw workflow
// history, as Temporal's server keeps it and any reader of the namespace
// reads it, holds neither the secret nor what the worker returned (the
// invocation id of the turn's status) in clear.
//
// (CONFORMANCE D13)
func TestD13HistoryHoldsNothingInClear(t *testing.T) {
	x := startCrossProcess(t, false, temporal.ClientConfig{FeedAddr: "127.0.0.1:0"})
	ctx := context.Background()
	const secret = "sk-live-4f1b2c9e8d7a6b5c"
	var res result
	select {
	case res = <-collect(x.cl.Run(ctx, x.app, user, x.key.SessionID, text("my key is "+secret), nil)):
	case <-time.After(time.Minute):
		t.Fatal("the turn did not end")
	}
	if res.err != nil {
		t.Fatalf("run: %v", res.err)
	}
	if !slices.ContainsFunc(res.events, func(ev *event.Event) bool { return ev.Text() == "echo my key is "+secret }) {
		t.Fatalf("the turn did not answer the message: %d events", len(res.events))
	}
	inv := res.events[0].InvocationID
	raw := rawHistory(t, x.cl.WorkflowID(appName, user, x.key.SessionID))
	feed := strings.TrimPrefix(x.cl.FeedURL(), "http://") // the message's feed address, its token beside it
	for what, s := range map[string]string{"the message's secret": secret, "the turn's invocation id": inv, "the feed address": feed} {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("the workflow history holds %s (%q) in clear", what, s)
		}
	}
}

// rawHistory returns the events of a workflow's history as Temporal
// stores them, encoded (protobuf), read by a client without any codec.
func rawHistory(t *testing.T, workflowID string) []byte {
	t.Helper()
	c := dialRaw(t)
	var raw []byte
	it := c.GetWorkflowHistory(context.Background(), workflowID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		b, err := proto.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b...)
	}
	if len(raw) == 0 {
		t.Fatal("empty history")
	}
	return raw
}

// TestD14CodecKeys: a payload encrypted under a key decodes under a codec
// that holds it, the encrypting one or an older one (keys rotate); under a
// codec without it, decoding fails with an error naming the key; an
// altered one fails; one written without a codec decodes as it is.
//
// (CONFORMANCE D14)
func TestD14CodecKeys(t *testing.T) {
	oldKey, newKey := bytes.Repeat([]byte{1}, temporal.KeySize), bytes.Repeat([]byte{2}, temporal.KeySize)
	before, err := temporal.NewCodec(oldKey)
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := temporal.NewCodec(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	other, err := temporal.NewCodec(newKey)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := converter.GetDefaultDataConverter().ToPayloads(temporal.Message{RequestID: "r", Content: text("secret")})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := before.Encode(plain.Payloads)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(enc[0].Metadata["encryption-key-id"]); got != before.KeyID() || got != temporal.KeyID(oldKey) {
		t.Fatalf("key id %q, want %q", got, before.KeyID())
	}
	if bytes.Contains(enc[0].Data, []byte("secret")) {
		t.Fatal("the encrypted payload holds the message in clear")
	}
	for name, c := range map[string]*temporal.Codec{"the same key": before, "an older key": rotated} {
		dec, err := c.Decode(enc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !proto.Equal(dec[0], plain.Payloads[0]) {
			t.Fatalf("%s: decoded %v, want %v", name, dec[0], plain.Payloads[0])
		}
	}
	if renc, _ := rotated.Encode(plain.Payloads); string(renc[0].Metadata["encryption-key-id"]) != temporal.KeyID(newKey) {
		t.Fatal("a rotated codec does not encrypt under its new key")
	}
	if _, err := other.Decode(enc); !errors.Is(err, temporal.ErrUnknownKey) || !strings.Contains(err.Error(), before.KeyID()) {
		t.Fatalf("decoding under another key: %v, want ErrUnknownKey naming %s", err, before.KeyID())
	}
	altered := proto.Clone(enc[0]).(*commonpb.Payload)
	altered.Data[len(altered.Data)-1] ^= 1
	if _, err := before.Decode([]*commonpb.Payload{altered}); err == nil {
		t.Fatal("an altered payload decoded")
	}
	truncated := proto.Clone(enc[0]).(*commonpb.Payload)
	truncated.Data = truncated.Data[:5]
	if _, err := before.Decode([]*commonpb.Payload{truncated}); err == nil {
		t.Fatal("a truncated payload decoded")
	}
	dec, err := other.Decode(plain.Payloads)
	if err != nil || !proto.Equal(dec[0], plain.Payloads[0]) {
		t.Fatalf("a payload without a codec: %v, %v", dec, err)
	}
	if _, err := temporal.NewCodec([]byte("short")); err == nil {
		t.Fatal("a short key was taken")
	}
}

// TestD14SignalledWorkflowReplaysWithCodec: a history recorded before the
// codec was configured (testdata/paused-signalled.json, payloads in clear)
// replays on a worker whose client has a codec.
//
// (CONFORMANCE D14)
func TestD14SignalledWorkflowReplaysWithCodec(t *testing.T) {
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{
		DataConverter: testCodec.DataConverter(), FailureConverter: testCodec.FailureConverter(),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.RegisterWorkflowWithOptions(temporal.SessionWorkflow, workflow.RegisterOptions{Name: temporal.WorkflowName})
	if err := r.ReplayWorkflowHistoryFromJSONFile(quiet, "testdata/paused-signalled.json"); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkCodec encrypts and decrypts the payload of a message of about
// a kilobyte, as a run update and its local activity do.
func BenchmarkCodec(b *testing.B) {
	p, err := converter.GetDefaultDataConverter().ToPayloads(temporal.Message{RequestID: "r", Content: text(strings.Repeat("a kilobyte of text ", 54))})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(proto.Size(p.Payloads[0])))
	for b.Loop() {
		enc, err := testCodec.Encode(p.Payloads)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := testCodec.Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}
