package temporal

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loomkit/loom/event"
)

// The push path: a turn whose client waits in another process sends the
// events it yields to that client's feed listener, in one HTTP POST per
// turn whose body is a stream of lines: an event in its stored JSON form,
// an empty line (a heartbeat), or "end" once the turn's events are all
// sent. The listener publishes them to the client's feed. The session log
// stays the source of truth: a stream cut short, refused or never opened
// leaves the client to read the turn's committed events from the log when
// the turn ends; partial events are best-effort.

// feedPath is the path of the listener's route: feedPath + request id.
const feedPath = "/loom/feed/"

// Bounds of a feed listener.
const (
	// feedMaxBytes bounds what one turn's stream may send.
	feedMaxBytes = 32 << 20
	// feedMaxLine bounds one event of a stream.
	feedMaxLine = 4 << 20
	// feedMaxStreams bounds the streams a listener reads at once.
	feedMaxStreams = 64
	// feedIdle is how long a stream may stay silent: a worker sends a
	// heartbeat every pushHeartbeat.
	feedIdle = time.Minute
)

// Timings of a worker's stream.
const (
	// pushHeartbeat is how often a stream with nothing to send says it
	// is alive.
	pushHeartbeat = 15 * time.Second
	// pushBuffer bounds the events a turn's stream holds that were not
	// sent yet; past it the stream drops what follows.
	pushBuffer = 1024
)

// pushWait bounds how long a turn that ended waits for its client's
// listener to take the rest of its stream. A variable for the tests.
var pushWait = 5 * time.Second

// listener is the HTTP handler of a client's feed listener.
type listener struct {
	hub      *hub
	maxBytes int64
	maxLine  int
	idle     time.Duration
	slots    chan struct{} // one per stream read
}

func newListener(h *hub) *listener {
	return &listener{hub: h, maxBytes: feedMaxBytes, maxLine: feedMaxLine, idle: feedIdle, slots: make(chan struct{}, feedMaxStreams)}
}

// ServeHTTP reads one turn's stream into its client's feed: POST
// feedPath + request id, with the turn's token as a bearer token.
func (l *listener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.URL.Path, feedPath)
	if !ok || id == "" || strings.Contains(id, "/") {
		refuse(w, http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		refuse(w, http.StatusMethodNotAllowed)
		return
	}
	select {
	case l.slots <- struct{}{}:
		defer func() { <-l.slots }()
	default:
		refuse(w, http.StatusServiceUnavailable)
		return
	}
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	f, status := l.hub.claim(id, token)
	if f == nil {
		refuse(w, status)
		return
	}
	if status := l.read(w, r, f); status != http.StatusNoContent {
		f.drop()
		refuse(w, status)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// refuse answers a stream with status without reading the rest of it: the
// connection is closed at once (the server would otherwise wait for the
// stream to end, or for 256 KiB of it, before answering).
func refuse(w http.ResponseWriter, status int) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	w.Header().Set("Connection", "close")
	http.Error(w, http.StatusText(status), status)
}

// read publishes the events of a stream to f until its end, and returns
// the status that answers it: 204 when the stream ended with "end", an
// error status when it broke off, was too large, stayed silent too long or
// its client left (which cuts it at once).
func (l *listener) read(w http.ResponseWriter, r *http.Request, f *feed) int {
	rc := http.NewResponseController(w)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-f.gone:
			_ = rc.SetReadDeadline(time.Now())
		case <-stop:
		}
	})
	defer func() { close(stop); wg.Wait() }()
	body := &io.LimitedReader{R: r.Body, N: l.maxBytes}
	br := bufio.NewReader(body)
	for {
		_ = rc.SetReadDeadline(time.Now().Add(l.idle))
		select {
		case <-f.gone:
			return http.StatusGone
		default:
		}
		line, err := readLine(br, l.maxLine)
		switch {
		case err == nil:
		case errors.Is(err, errLineTooLong), body.N <= 0:
			return http.StatusRequestEntityTooLarge
		case isTimeout(err):
			select {
			case <-f.gone:
				return http.StatusGone
			default:
				return http.StatusRequestTimeout
			}
		default:
			return http.StatusBadRequest // cut short: no "end"
		}
		switch string(line) {
		case "":
			continue // a heartbeat
		case "end":
			return http.StatusNoContent
		}
		ev := new(event.Event)
		if err := ev.UnmarshalJSON(line); err != nil {
			return http.StatusBadRequest
		}
		f.add(ev)
	}
}

var errLineTooLong = errors.New("temporal: a feed line is too long")

// readLine returns the next line of br without its newline, refusing one
// longer than maxLine. A stream that ends without a newline is cut short.
func readLine(br *bufio.Reader, maxLine int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > maxLine+1 {
			return nil, errLineTooLong
		}
		switch {
		case err == nil:
			if line == nil {
				return chunk[:len(chunk)-1], nil
			}
			line = append(line, chunk...)
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			line = append(line, chunk...)
		case errors.Is(err, io.EOF):
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// feedServer is a client's feed listener, serving on its own port.
type feedServer struct {
	url string // the base address workers post to
	srv *http.Server
	ln  net.Listener
}

// listenFeed starts a feed listener on addr; workers reach it at base
// (default: http:// and the address it listens on, which must then be
// a specific one).
func listenFeed(addr, base string) (*feedServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("temporal: feed listener: %w", err)
	}
	if base == "" {
		host, _, _ := net.SplitHostPort(ln.Addr().String())
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			ln.Close()
			return nil, fmt.Errorf("temporal: the feed listener listens on every interface (%s): set ClientConfig.FeedURL to the address workers reach it at", ln.Addr())
		}
		base = "http://" + ln.Addr().String()
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		ln.Close()
		return nil, fmt.Errorf("temporal: feed URL %q: want http:// or https://", base)
	}
	s := &feedServer{url: strings.TrimSuffix(base, "/") + feedPath, ln: ln, srv: &http.Server{
		Handler:           newListener(feeds),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    8 << 10,
	}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// close stops the listener and cuts its streams.
func (s *feedServer) close() error { return s.srv.Close() }

// pushClient sends the streams of the turns: straight to the listener,
// never through a proxy.
var pushClient = &http.Client{Transport: &http.Transport{
	Proxy:                 nil,
	DialContext:           (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	TLSHandshakeTimeout:   5 * time.Second,
	MaxIdleConnsPerHost:   16,
	IdleConnTimeout:       90 * time.Second,
	ResponseHeaderTimeout: pushWait,
}}

// pusher sends the events of one turn to its client's feed listener. Its
// publish never blocks the turn: when the listener is slow, unreachable or
// gone, the stream drops what follows and the client reads the log.
type pusher struct {
	ch     chan *event.Event
	broken atomic.Bool // events were dropped, or the stream failed
	clean  bool        // set before ch closes: every event was published
	done   chan struct{}
	cancel context.CancelFunc
}

// push opens the stream of a turn to url, which authenticates it by token.
func push(url, token string) *pusher {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pusher{ch: make(chan *event.Event, pushBuffer), done: make(chan struct{}), cancel: cancel}
	go p.run(ctx, url, token)
	return p
}

// publish queues a copy of ev for the stream, or drops it (and every later
// event) if the stream cannot keep up.
func (p *pusher) publish(ev *event.Event) {
	if p.broken.Load() {
		return
	}
	select {
	case p.ch <- ev.Clone():
	default:
		p.broken.Store(true)
	}
}

// finish ends the stream, with "end" when the turn's events were all
// published (clean), and waits, for at most pushWait, for the listener to
// take it: the client then has them when the turn's update answers.
func (p *pusher) finish(clean bool) {
	p.clean = clean
	close(p.ch)
	select {
	case <-p.done:
	case <-time.After(pushWait):
		p.cancel()
		<-p.done
	}
	p.cancel()
}

func (p *pusher) run(ctx context.Context, url, token string) {
	defer close(p.done)
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, pr)
	if err != nil {
		p.broken.Store(true)
		for range p.ch {
		}
		return
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/x-ndjson")
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		resp, err := pushClient.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
			resp.Body.Close()
		}
		_ = pr.CloseWithError(errors.New("temporal: the feed stream ended"))
	}()
	tick := time.NewTicker(pushHeartbeat)
	defer tick.Stop()
	var buf bytes.Buffer
	broken := false // the stream was cut
	send := func(line []byte) {
		if broken {
			return
		}
		if p.broken.Load() {
			// Events were dropped: what follows would not be a prefix of
			// the turn's events. The listener learns it at once.
			broken = true
			_ = pw.CloseWithError(errors.New("temporal: the feed stream dropped events"))
			return
		}
		buf.Reset()
		buf.Write(line)
		buf.WriteByte('\n')
		if _, err := pw.Write(buf.Bytes()); err != nil {
			broken = true
			p.broken.Store(true)
		}
	}
	for {
		select {
		case ev, ok := <-p.ch:
			if !ok {
				if p.clean {
					send([]byte("end"))
				} else {
					p.broken.Store(true)
					send(nil) // cuts the stream: the turn failed
				}
				_ = pw.Close()
				<-answered
				return
			}
			b, err := ev.MarshalStored()
			if err != nil {
				p.broken.Store(true)
				continue
			}
			send(b)
		case <-tick.C:
			send(nil)
		}
	}
}
