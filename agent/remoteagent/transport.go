package remoteagent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/google/uuid"
)

// MaxEventBytes bounds one server-sent event of a remote's stream (one
// status or artifact update, JSON-RPC framing included). A larger event
// ends the run with an ErrorRequest error event.
const MaxEventBytes = 32 << 20

// jsonrpcTransport is the SDK's JSON-RPC transport with its own reading of
// message/stream: the SDK reads a stream with a line scanner of the
// default 64 KiB, so a streamed answer any longer (a long text, a file as
// bytes) failed; this one reads events up to MaxEventBytes.
type jsonrpcTransport struct {
	a2aclient.Transport
	url string
	hc  *http.Client
}

// jsonrpcTransportOption makes a client use jsonrpcTransport over hc.
func jsonrpcTransportOption(hc *http.Client) a2aclient.FactoryOption {
	return a2aclient.WithTransport(a2a.TransportProtocolJSONRPC,
		a2aclient.TransportFactoryFn(func(_ context.Context, url string, _ *a2a.AgentCard) (a2aclient.Transport, error) {
			return jsonrpcTransport{Transport: a2aclient.NewJSONRPCTransport(url, hc), url: url, hc: hc}, nil
		}))
}

// SendStreamingMessage implements a2aclient.Transport.
func (t jsonrpcTransport) SendStreamingMessage(ctx context.Context, p *a2a.MessageSendParams) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "message/stream", "params": p, "id": uuid.NewString()})
		if err != nil {
			yield(nil, fmt.Errorf("encode the request: %w", err))
			return
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
		if err != nil {
			yield(nil, err)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		if meta, ok := a2aclient.CallMetaFrom(ctx); ok {
			for k, vs := range meta {
				for _, v := range vs {
					req.Header.Add(k, v)
				}
			}
		}
		resp, err := t.hc.Do(req)
		if err != nil {
			yield(nil, fmt.Errorf("send the request: %w", err))
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			yield(nil, fmt.Errorf("unexpected HTTP status: %s", resp.Status))
			return
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), MaxEventBytes)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data:")
			if !ok {
				continue // blank lines, comments, other fields
			}
			var msg struct {
				Result json.RawMessage `json:"result"`
				Error  *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(data, " ")), &msg); err != nil {
				yield(nil, fmt.Errorf("malformed stream event: %w", err))
				return
			}
			if msg.Error != nil {
				yield(nil, fmt.Errorf("JSON-RPC error %d: %s", msg.Error.Code, msg.Error.Message))
				return
			}
			ev, err := a2a.UnmarshalEventJSON(msg.Result)
			if err != nil {
				yield(nil, fmt.Errorf("malformed stream event: %w", err))
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
		if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
			yield(nil, fmt.Errorf("an event of the stream is too large (over %d bytes)", MaxEventBytes))
		} else if err != nil {
			yield(nil, fmt.Errorf("read the stream: %w", err))
		}
	}
}
