// Package ui serves Loom's development web UI: a single page, embedded in
// the binary, for chatting with an application's agents and inspecting what
// they do.
//
// The page lets you pick an application and a user id, list, create and
// delete sessions, and chat: messages are sent to POST /run_sse and the
// answer streams in as it is generated. Beside the chat, a timeline shows
// every event of the session (author, text, function calls and responses,
// state and artifact deltas, transfers, errors), with the session state and
// its artifacts (view and download) one tab away. The Trace tab shows the
// spans recorded for the session's invocations as a waterfall (from the
// debug trace routes), and an opened timeline event shows the attributes of
// the span that produced it. The Usage tab shows the session's tokens and
// cost, in total and per turn (from the session usage route), and the
// chat's header the session's total. A tool call awaiting confirmation
// (adk_request_confirmation) gets Approve and Reject buttons, and a graph
// workflow node's request for input (adk_request_input) a box to answer
// in. The Graph tab draws the app's workflow graph (or agent tree) from
// the build_graph route, with the node that is running or paused
// highlighted from the events' nodeInfo paths. A tool's OAuth2 request
// (adk_request_credential with an authorization URL) gets a Sign in
// button, which opens the authorization URL in a popup; the redirect lands
// on [CallbackPath], whose page posts the redirect URL back to the UI, and
// the UI answers the request with it as ADK's web UI does. The redirect
// URL can also be pasted by hand. An agent tool paused on its child's
// OAuth2 request gets the same card.
//
// The UI is plain HTML, CSS and JavaScript modules: nothing to build. It
// talks to the ADK HTTP API of package server, on the same origin by
// default (see the runtime configuration below), so it is mounted next to
// that API:
//
//	api, err := server.New(server.Config{Apps: apps})
//	if err != nil { ... }
//	http.ListenAndServe("127.0.0.1:8000", ui.Wrap(api))
//
// The page is served under [Prefix], "/dev-ui/", like ADK's own web UI, and
// reads its runtime configuration from /dev-ui/assets/config/runtime-config.json
// ({"backendUrl": ""}: the API is on the same origin).
package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// Prefix is the path under which the UI is served.
const Prefix = "/dev-ui/"

// CallbackPath is the UI's OAuth2 redirect route: the redirect URI the UI
// gives an authorization URL whose tool names none. The page served there
// hands the redirect URL to the UI window that opened the sign-in, or
// shows it to paste by hand.
const CallbackPath = Prefix + "oauth2/callback"

//go:embed static
var static embed.FS

// files is the UI's file tree, rooted at the directory served under Prefix.
var files = func() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		// fs.Sub fails only for an invalid path, and "static" is valid.
		panic(err)
	}
	return sub
}()

// FS returns the UI's files (index.html, its scripts and styles), for
// callers that serve them another way.
func FS() fs.FS { return files }

// Handler returns a handler serving the UI for request paths under
// [Prefix]. Mount it at Prefix:
//
//	mux.Handle(ui.Prefix, ui.Handler())
//
// Files are served with Cache-Control: no-cache, so a rebuilt binary's UI
// is picked up on the next reload.
func Handler() http.Handler {
	fileServer := http.StripPrefix(strings.TrimSuffix(Prefix, "/"), http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if r.URL.Path == CallbackPath {
			// The URL holds an authorization code: kept out of caches and
			// of the Referer of anything the page loads.
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Referrer-Policy", "no-referrer")
			http.ServeFileFS(w, r, files, "oauth2_callback.html")
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		fileServer.ServeHTTP(w, r)
	})
}

// Wrap returns a handler that serves the UI under [Prefix], redirects "/"
// and "/dev-ui" to it, and passes every other request to api.
func Wrap(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(Prefix, Handler())
	redirect := http.RedirectHandler(Prefix, http.StatusFound)
	mux.Handle("GET /{$}", redirect)
	mux.Handle("GET /dev-ui", redirect)
	mux.Handle("/", api)
	return mux
}
