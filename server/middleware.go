package server

import (
	"fmt"
	"net/http"
	"slices"
)

// limitBody caps the size of request bodies; reading past the limit fails
// with *http.MaxBytesError, answered with 413.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxRequestBytes)
		}
		next.ServeHTTP(w, r)
	})
}

// originGuard returns the middleware that refuses cross-origin writes from
// origins not in Config.AllowedOrigins (403) and sets CORS headers for the
// allowed ones, answering their preflight requests.
//
// Requests without an Origin or Sec-Fetch-Site header (non-browser clients)
// and same-origin requests are always let through.
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
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Add("Vary", "Origin")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE, OPTIONS")
				if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
					h.Set("Access-Control-Allow-Headers", req)
				}
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
			next.ServeHTTP(w, r)
		})
	}, nil
}
