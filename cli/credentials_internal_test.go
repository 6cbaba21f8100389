package cli

import (
	"context"
	"database/sql"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/credential"
)

// TestT20CredentialKeyFromTheEnvironment: with $LOOM_CREDENTIAL_KEY (or
// --credential-key-file) users' credentials are kept sealed in the SQLite
// session database, and read back by the next process with the same key;
// a malformed key is refused with an error naming where it came from
// (CONFORMANCE T20).
func TestT20CredentialKeyFromTheEnvironment(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "sessions.db")
	key := base64.StdEncoding.EncodeToString(credential.GenerateKey())
	env := Env{Getenv: func(k string) string {
		if k == EnvCredentialKey {
			return key
		}
		return ""
	}}
	o := &options{sessions: "sqlite://" + file}
	k := credential.Key{AppName: "app", UserID: "alice", Name: "calendar"}
	svc, closeFn, err := openCredentials(ctx, env, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Put(ctx, k, []byte("token-in-clear")); err != nil {
		t.Fatal(err)
	}
	closeFn()

	keyFile := filepath.Join(dir, "credential.key")
	os.WriteFile(keyFile, []byte(key+"\n"), 0o600)
	o.credentialKeyFile = keyFile
	svc, closeFn, err = openCredentials(ctx, Env{Getenv: func(string) string { return "" }}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if got, err := svc.Get(ctx, k); err != nil || string(got) != "token-in-clear" {
		t.Fatalf("the next process read %q, %v", got, err)
	}
	db, err := sql.Open("sqlite", file)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM credentials WHERE CAST(record AS TEXT) LIKE '%token-in-clear%'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("records in clear: %d, %v", n, err)
	}

	os.WriteFile(keyFile, []byte("too-short"), 0o600)
	if _, _, err := openCredentials(ctx, env, o); err == nil || !strings.Contains(err.Error(), keyFile) {
		t.Fatalf("a malformed key: %v, want an error naming %s", err, keyFile)
	}
}
