package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/loomkit/loom/session"
)

// limitBody caps the size of request bodies; reading past the limit fails
// with *http.MaxBytesError, answered with 413.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			lb := &limitedBody{ReadCloser: http.MaxBytesReader(w, r.Body, s.cfg.MaxRequestBytes), maxDepth: s.cfg.MaxJSONDepth}
			if s.cfg.BodyReadTimeout > 0 {
				// Errors mean the connection has no deadlines (a test
				// recorder, HTTP/2 without support): nothing to bound.
				lb.rc = http.NewResponseController(w)
				_ = lb.rc.SetReadDeadline(time.Now().Add(s.cfg.BodyReadTimeout))
			}
			r.Body = lb
		}
		next.ServeHTTP(w, r)
	})
}

// limitedBody is a request body with the limits readBody enforces.
type limitedBody struct {
	io.ReadCloser
	maxDepth int                      // nesting limit of a JSON body
	rc       *http.ResponseController // set when a read deadline is in force
}

// done lifts the body's read deadline once it has been read.
func (b *limitedBody) done() {
	if b.rc != nil {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
}

// checkDepth fails if the JSON text b nests arrays and objects deeper than
// max. A value nested thousands deep decodes, but what embeds it (an event
// in a session) may then be too deep for any decoder to read back.
func checkDepth(b []byte, max int) error {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > max {
				return badRequest("JSON nested deeper than %d levels", max)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// loopbackHosts are the host names always accepted in a Host header.
var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// hostGuard returns the middleware that refuses requests whose Host header
// names neither a loopback host nor one of Config.AllowedHosts, with 421.
// It defeats DNS rebinding: a page on a foreign domain whose name was made
// to resolve to this server still sends its own domain as the Host.
func (s *Server) hostGuard() (func(http.Handler) http.Handler, error) {
	anyHost := false
	var allowed []string // lower-case "host" (any port) or "host:port"
	for _, h := range s.cfg.AllowedHosts {
		h = strings.ToLower(strings.TrimSpace(h))
		switch {
		case h == "*":
			anyHost = true
		case h == "" || strings.ContainsAny(h, "/ "):
			return nil, fmt.Errorf("server: allowed host %q: want a host name, optionally with a port", h)
		}
		allowed = append(allowed, h)
	}
	ok := func(hostport string) bool {
		if hostport == "" {
			return true // HTTP/1.0 without Host: not a browser
		}
		hostport = strings.ToLower(hostport)
		host, _, err := net.SplitHostPort(hostport)
		if err != nil {
			host = hostport
		}
		host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
		if slices.Contains(loopbackHosts, host) {
			return true
		}
		return slices.Contains(allowed, host) || slices.Contains(allowed, "["+host+"]") || slices.Contains(allowed, hostport)
	}
	return func(next http.Handler) http.Handler {
		if anyHost {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !ok(r.Host) {
				_ = writeJSON(w, http.StatusMisdirectedRequest, errorBody{"Host not allowed: " + r.Host + " (see Config.AllowedHosts, --allowed-hosts)"})
				return
			}
			next.ServeHTTP(w, r)
		})
	}, nil
}

// originGuard returns the middleware that refuses cross-origin writes from
// origins not in Config.AllowedOrigins (403) and sets CORS headers for the
// allowed ones, answering their preflight requests.
//
// Requests without an Origin or Sec-Fetch-Site header (non-browser clients)
// and same-origin requests are always let through; the host guard, which
// runs first, has made sure that the Host they match is one of ours.
//
// With "*", every origin may call the API without credentials: responses
// carry Access-Control-Allow-Origin: * and no Allow-Credentials header, so
// browsers send no cookies and expose no credentialed responses.
func (s *Server) originGuard() (func(http.Handler) http.Handler, error) {
	anyOrigin := slices.Contains(s.cfg.AllowedOrigins, "*")
	cop := http.NewCrossOriginProtection()
	if !anyOrigin {
		for _, o := range s.cfg.AllowedOrigins {
			if err := cop.AddTrustedOrigin(o); err != nil {
				return nil, fmt.Errorf("server: allowed origin %q: %w", o, err)
			}
		}
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = writeJSON(w, http.StatusForbidden, errorBody{"Origin not allowed: " + r.Header.Get("Origin")})
	}))
	allowed := func(origin string) bool {
		return origin != "" && (anyOrigin || slices.Contains(s.cfg.AllowedOrigins, origin))
	}
	return func(next http.Handler) http.Handler {
		if !anyOrigin {
			next = cop.Handler(next)
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			origin := r.Header.Get("Origin")
			if !allowed(origin) {
				next.ServeHTTP(w, r)
				return
			}
			h := w.Header()
			if anyOrigin {
				h.Set("Access-Control-Allow-Origin", "*")
			} else {
				h.Set("Access-Control-Allow-Origin", origin)
				h.Set("Access-Control-Allow-Credentials", "true")
				h.Add("Vary", "Origin")
			}
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE, OPTIONS")
				if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
					h.Set("Access-Control-Allow-Headers", req)
					h.Add("Vary", "Access-Control-Request-Headers")
				}
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
			next.ServeHTTP(w, r)
		})
	}, nil
}

// errUnauthenticated is returned for requests Config.Authenticate refused.
var errUnauthenticated = errors.New("unauthenticated")

type authKey struct{}

// AuthenticatedUser returns the user Config.Authenticate bound a request
// to, from the request's context, and whether there is one. Handlers
// served through Config.Mounts use it to keep each caller to its own data.
func AuthenticatedUser(ctx context.Context) (string, bool) {
	u, ok := ctx.Value(authKey{}).(string)
	return u, ok
}

// authenticate runs Config.Authenticate for a request that matched a
// route, binding the request to its user, and checks that a {user} in the
// path is that user. /health stays open, for load balancers.
func (s *Server) authenticate(r *http.Request) (*http.Request, error) {
	if s.cfg.Authenticate == nil || r.Pattern == "GET /health" {
		return r, nil
	}
	user, err := s.cfg.Authenticate(r)
	if err != nil || user == "" {
		if err == nil {
			err = errors.New("no user")
		}
		return r, &detailError{detail: "Not authenticated", err: fmt.Errorf("%w: %w", errUnauthenticated, err)}
	}
	r = r.WithContext(context.WithValue(r.Context(), authKey{}, user))
	if err := checkUser(r, r.PathValue("user")); err != nil {
		return r, err
	}
	return r, nil
}

// checkUser fails with 403 if the request is bound to a user other than
// user; an empty user names nobody and passes.
func checkUser(r *http.Request, user string) error {
	if bound, ok := AuthenticatedUser(r.Context()); ok && user != "" && user != bound {
		return &detailError{detail: "Access to user " + user + " is not allowed", err: errForbidden}
	}
	return nil
}

// maxIDBytes bounds app, user and session ids.
const maxIDBytes = 128

// checkID rejects, with 400, an id the session service would refuse
// (session.CheckID), one longer than the server's own bound, and the ids
// "." and "..", which no URL path can address. An empty id is left to the
// route (absent, or one to generate).
func checkID(what, id string) error {
	switch {
	case id == "":
		return nil
	case len(id) > maxIDBytes:
		return badRequest("%s is longer than %d bytes", what, maxIDBytes)
	case id == "." || id == "..":
		return badRequest("%s %q is not allowed", what, id)
	}
	return session.CheckID(what, id)
}

// checkPathIDs checks the ids a route's path names.
func checkPathIDs(r *http.Request) error {
	for _, p := range []struct{ name, what string }{{"app", "app name"}, {"user", "user id"}, {"sid", "session id"}} {
		if err := checkID(p.what, r.PathValue(p.name)); err != nil {
			return err
		}
	}
	return nil
}
