package openapitool_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// The secrets the test API accepts.
const (
	headerKey = "hk-secret-1111"
	queryKey  = "qk-secret-2222"
	cookieKey = "ck-secret-3333"
	bearerTok = "bt-secret-4444"
)

// petSpec is the document of the test API: eight operations mixing path,
// query, header and cookie parameters, JSON bodies built from $ref schemas
// (one recursive), four security schemes and error responses.
const petSpec = `
openapi: 3.0.3
info:
  title: Pet store
  version: "1.0"
servers:
  - url: https://{region}.pets.example/v1
    variables:
      region:
        default: eu
security:
  - apiKeyHeader: []
tags:
  - name: pets
  - name: owners
  - name: stores
  - name: ops
paths:
  /pets:
    get:
      operationId: listPets
      summary: List pets
      description: Lists the pets of the store, oldest first.
      tags: [pets]
      parameters:
        - name: limit
          in: query
          description: How many pets to return at most.
          schema: {type: integer, minimum: 1, maximum: 100}
        - name: tags
          in: query
          description: Only pets with one of these tags.
          schema:
            type: array
            items: {type: string}
        - $ref: '#/components/parameters/RequestID'
      responses:
        "200":
          description: The pets.
          content:
            application/json:
              schema:
                type: array
                items: {$ref: '#/components/schemas/Pet'}
    post:
      operationId: createPet
      summary: Add a pet to the store.
      tags: [pets]
      security:
        - bearerAuth: []
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/NewPet'}
      responses:
        "201":
          description: The new pet.
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Pet'}
  /pets/{petId}:
    parameters:
      - name: petId
        in: path
        required: true
        description: The pet's id.
        schema: {type: integer, format: int64}
    get:
      operationId: getPetById
      description: Returns one pet.
      tags: [pets]
      parameters:
        - name: session
          in: cookie
          description: The visitor's session, for the store's statistics.
          schema: {type: string}
      responses:
        "200":
          description: The pet.
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Pet'}
        "404":
          $ref: '#/components/responses/NotFound'
    delete:
      operationId: deletePet
      description: Removes a pet from the store.
      tags: [pets, admin]
      security:
        - bearerAuth: []
      responses:
        "204":
          description: Removed.
  /pets/{petId}/owner:
    put:
      operationId: updatePetOwner
      description: Sets the owner of a pet.
      tags: [owners]
      security:
        - apiKeyCookie: []
      parameters:
        - name: petId
          in: path
          required: true
          schema: {type: integer}
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/Owner'}
      responses:
        "200":
          description: The owner.
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Owner'}
  /stores/{storeId}/inventory:
    get:
      description: Counts the pets of a store by kind.
      tags: [stores]
      security:
        - apiKeyQuery: []
      parameters:
        - name: storeId
          in: path
          required: true
          schema: {type: string}
      responses:
        "200":
          description: Counts by kind.
          content:
            application/json:
              schema:
                type: object
                additionalProperties: {type: integer}
  /health:
    get:
      operationId: health
      description: Tells whether the store is up.
      tags: [ops]
      security: []
      responses:
        "200":
          description: Up.
          content:
            text/plain:
              schema: {type: string}
  /maintenance:
    post:
      operationId: runMaintenance
      description: Starts the nightly maintenance.
      tags: [ops]
      security: []
      responses:
        "202":
          description: Started.
        "503":
          description: Not now.
components:
  parameters:
    RequestID:
      name: X-Request-ID
      in: header
      required: true
      description: Correlates the request in the store's logs.
      schema: {type: string}
  responses:
    NotFound:
      description: No such pet.
      content:
        application/json:
          schema: {$ref: '#/components/schemas/Error'}
  schemas:
    Pet:
      type: object
      required: [id, name]
      properties:
        id: {type: integer, format: int64, readOnly: true}
        name: {type: string}
        tag: {type: string}
    NewPet:
      type: object
      required: [name]
      properties:
        id:
          type: integer
          readOnly: true
        name:
          type: string
          description: The pet's name.
        tag:
          type: string
        status:
          type: string
          enum: [available, pending, sold]
        category:
          $ref: '#/components/schemas/Category'
    Category:
      type: object
      description: A category, inside its parent category.
      properties:
        name: {type: string}
        parent: {$ref: '#/components/schemas/Category'}
    Owner:
      type: object
      required: [name]
      properties:
        name: {type: string, description: The owner's full name.}
        email: {type: string, format: email}
        address: {$ref: '#/components/schemas/Address'}
    Address:
      type: object
      description: A postal address.
      required: [city]
      properties:
        street: {type: string}
        city: {type: string}
    Error:
      type: object
      properties:
        code: {type: integer}
        message: {type: string}
  securitySchemes:
    apiKeyHeader:
      type: apiKey
      in: header
      name: X-API-Key
    apiKeyQuery:
      type: apiKey
      in: query
      name: api_key
    apiKeyCookie:
      type: apiKey
      in: cookie
      name: store_key
    bearerAuth:
      type: http
      scheme: bearer
      bearerFormat: JWT
`

// request is what the test API saw of one request.
type request struct {
	Method, Path, Query string
	APIKey, Auth        string // X-API-Key and Authorization headers
	RequestID           string
	Cookie              string
	ContentType         string
	Body                string
}

// petServer is the test API.
type petServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []request
}

func (s *petServer) requests() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

func newPetServer(t *testing.T) *petServer {
	t.Helper()
	s := &petServer{}
	mux := http.NewServeMux()
	writeJSON := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	headerAuth := func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("X-API-Key") != headerKey {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"code": 401, "message": "bad or missing API key"})
			return false
		}
		return true
	}
	bearerAuth := func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") != "Bearer "+bearerTok {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"code": 401, "message": "bad or missing token"})
			return false
		}
		return true
	}
	pets := []map[string]any{{"id": 1, "name": "Rex", "tag": "dog"}, {"id": 2, "name": "Tom", "tag": "cat"}, {"id": 3, "name": "Bob", "tag": "fish"}}
	mux.HandleFunc("GET /v1/pets", func(w http.ResponseWriter, r *http.Request) {
		if !headerAuth(w, r) {
			return
		}
		tags := r.URL.Query()["tags"]
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		var out []map[string]any
		for _, p := range pets {
			if (len(tags) == 0 || slices.Contains(tags, p["tag"].(string))) && (limit == 0 || len(out) < limit) {
				out = append(out, p)
			}
		}
		writeJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("POST /v1/pets", func(w http.ResponseWriter, r *http.Request) {
		if !bearerAuth(w, r) {
			return
		}
		var p map[string]any
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"code": 400, "message": err.Error()})
			return
		}
		p["id"] = 4
		writeJSON(w, http.StatusCreated, p)
	})
	mux.HandleFunc("GET /v1/pets/{petId}", func(w http.ResponseWriter, r *http.Request) {
		if !headerAuth(w, r) {
			return
		}
		id, _ := strconv.Atoi(r.PathValue("petId"))
		for _, p := range pets {
			if p["id"] == id {
				writeJSON(w, http.StatusOK, p)
				return
			}
		}
		writeJSON(w, http.StatusNotFound, map[string]any{"code": 404, "message": fmt.Sprintf("pet %s not found", r.PathValue("petId"))})
	})
	mux.HandleFunc("DELETE /v1/pets/{petId}", func(w http.ResponseWriter, r *http.Request) {
		if bearerAuth(w, r) {
			w.WriteHeader(http.StatusNoContent)
		}
	})
	mux.HandleFunc("PUT /v1/pets/{petId}/owner", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie("store_key"); err != nil || c.Value != cookieKey {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"code": 401, "message": "bad or missing store key"})
			return
		}
		var o map[string]any
		if err := json.NewDecoder(r.Body).Decode(&o); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"code": 400, "message": err.Error()})
			return
		}
		o["pet"] = r.PathValue("petId")
		writeJSON(w, http.StatusOK, o)
	})
	mux.HandleFunc("GET /v1/stores/{storeId}/inventory", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("api_key") != queryKey {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"code": 401, "message": "bad or missing api_key"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"dog": 1, "cat": 1, "fish": 1})
	})
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("POST /v1/maintenance", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "maintenance window:\n  try again after 02:00")
	})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, request{
			Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery,
			APIKey: r.Header.Get("X-API-Key"), Auth: r.Header.Get("Authorization"),
			RequestID: r.Header.Get("X-Request-ID"), Cookie: r.Header.Get("Cookie"),
			ContentType: r.Header.Get("Content-Type"), Body: string(b),
		})
		s.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}
