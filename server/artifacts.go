package server

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/loomkit/loom/artifact"
)

// artifactRef returns the app's artifact service and the artifact named by
// the request path. An app without an artifact service has no artifacts.
func (s *Server) artifactRef(r *http.Request) (*artifact.Service, artifact.Ref, error) {
	a, key, err := s.sessionKey(r)
	if err != nil {
		return nil, artifact.Ref{}, err
	}
	ref := artifact.Ref{AppName: key.AppName, UserID: key.UserID, SessionID: key.SessionID, Name: r.PathValue("name")}
	return a.Artifacts(), ref, nil
}

// listArtifacts serves GET .../artifacts: the artifact names of the session
// and the user's shared ones.
func (s *Server) listArtifacts(w http.ResponseWriter, r *http.Request) error {
	svc, ref, err := s.artifactRef(r)
	if err != nil {
		return err
	}
	names := []string{}
	if svc != nil {
		list, err := svc.List(r.Context(), ref.AppName, ref.UserID, ref.SessionID)
		if err != nil {
			return err
		}
		names = append(names, list...)
	}
	return writeJSON(w, http.StatusOK, names)
}

// loadArtifact serves GET .../artifacts/{name}[?version=N] and
// GET .../artifacts/{name}/versions/{version}: one version as a genai Part.
func (s *Server) loadArtifact(w http.ResponseWriter, r *http.Request) error {
	svc, ref, err := s.artifactRef(r)
	if err != nil {
		return err
	}
	version := artifact.Latest
	v := r.PathValue("version")
	if v == "" {
		v = r.URL.Query().Get("version")
	}
	if v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return unprocessable("version must be a non-negative integer")
		}
		version = n
	}
	if svc == nil {
		return artifactError(ref.Name, fmt.Errorf("no artifact service: %w", artifact.ErrNotFound))
	}
	part, err := svc.Load(r.Context(), ref, version)
	if err != nil {
		return artifactError(ref.Name, err)
	}
	return writeJSON(w, http.StatusOK, part)
}

// artifactVersions serves GET .../artifacts/{name}/versions.
func (s *Server) artifactVersions(w http.ResponseWriter, r *http.Request) error {
	svc, ref, err := s.artifactRef(r)
	if err != nil {
		return err
	}
	if svc == nil {
		return artifactError(ref.Name, fmt.Errorf("no artifact service: %w", artifact.ErrNotFound))
	}
	vs, err := svc.Versions(r.Context(), ref)
	if err != nil {
		return artifactError(ref.Name, err)
	}
	if vs == nil {
		vs = []int64{}
	}
	return writeJSON(w, http.StatusOK, vs)
}

// deleteArtifact serves DELETE .../artifacts/{name}; it answers null.
func (s *Server) deleteArtifact(w http.ResponseWriter, r *http.Request) error {
	svc, ref, err := s.artifactRef(r)
	if err != nil {
		return err
	}
	if svc != nil {
		if err := svc.Delete(r.Context(), ref); err != nil {
			return artifactError(ref.Name, err)
		}
	}
	return writeJSON(w, http.StatusOK, nil)
}
