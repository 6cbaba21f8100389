package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/credential/memcredential"
	"github.com/loomkit/loom/credential/sqlcredential"
)

// EnvCredentialKey names the environment variable that may hold the key
// users' credentials are sealed with (KeySize bytes of
// package credential, in base64 or hex), when --credential-key-file names
// no file.
const EnvCredentialKey = "LOOM_CREDENTIAL_KEY"

// openCredentials opens the service keeping the credentials users grant
// to tools, such as OAuth2 tokens (runner.Config.Credentials). With a key
// (--credential-key-file, else $LOOM_CREDENTIAL_KEY) they are kept,
// sealed under it, in the session database when that is a SQLite file or
// PostgreSQL, and in memory otherwise; without one, in memory under a key
// of the process, so that users sign in again after a restart and nothing
// reaches the disk. close releases what it opened.
func openCredentials(ctx context.Context, env Env, o *options) (svc *credential.Service, close func() error, err error) {
	close = func() error { return nil }
	text := env.Getenv(EnvCredentialKey)
	from := "$" + EnvCredentialKey
	if o.credentialKeyFile != "" {
		b, err := os.ReadFile(o.credentialKeyFile)
		if err != nil {
			return nil, close, fmt.Errorf("credential key: %w", err)
		}
		text, from = string(b), o.credentialKeyFile
	}
	if strings.TrimSpace(text) == "" {
		svc, err := memcredential.NewService(credential.GenerateKey())
		return svc, close, err
	}
	key, err := credential.ParseKey(text)
	if err != nil {
		return nil, close, fmt.Errorf("credential key in %s: %w", from, err)
	}
	_, sqlite := sqliteFile(o.sessions)
	if !sqlite && !strings.HasPrefix(o.sessions, "postgres:") && !strings.HasPrefix(o.sessions, "postgresql:") {
		svc, err := memcredential.NewService(key)
		return svc, close, err
	}
	store, err := sqlcredential.Open(ctx, o.sessions)
	if err != nil {
		return nil, close, fmt.Errorf("%s: %w", redact(o.sessions), err)
	}
	if svc, err = credential.NewService(store, key); err != nil {
		store.Close()
		return nil, close, err
	}
	return svc, store.Close, nil
}
