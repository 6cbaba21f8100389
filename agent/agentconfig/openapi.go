package agentconfig

import (
	"context"
	"encoding/json"
	"errors"
	"os"

	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/openapitool"
)

// newOpenAPI builds an OpenAPIToolset entry (schema: OpenAPIToolsetArgs):
// the tools of an OpenAPI document, as ADK's OpenAPIToolset takes its
// arguments. An auth_scheme applies to every operation; an
// auth_credential of type oauth2 is the client with which the toolset
// signs each user in (credential/oauth), its secret read from the
// environment variable client_secret_env names when the file gives none.
func newOpenAPI(t *ToolSpec) (tool.Tool, tool.Toolset, error) {
	if !t.hasArgs {
		return nil, nil, t.Errorf("", "needs args: the document (spec_dict, spec_str or spec_path)")
	}
	var a struct {
		SpecStr        string   `yaml:"spec_str"`
		ToolFilter     []string `yaml:"tool_filter"`
		ToolNamePrefix string   `yaml:"tool_name_prefix"`
	}
	if err := t.Decode(&a); err != nil {
		return nil, nil, err
	}
	cfg := openapitool.Config{Operations: a.ToolFilter}
	if a.ToolNamePrefix != "" {
		cfg.Name = a.ToolNamePrefix
		cfg.NamePrefix = a.ToolNamePrefix + "_"
	}
	specKey, n := "", 0
	if d, ok := t.args.get("spec_dict"); ok {
		v, err := d.value()
		if err != nil {
			return nil, nil, err
		}
		if cfg.Spec, err = json.Marshal(v); err != nil {
			return nil, nil, d.errorf("%v", err)
		}
		specKey, n = "spec_dict", n+1
	}
	if a.SpecStr != "" {
		cfg.Spec, specKey, n = []byte(a.SpecStr), "spec_str", n+1
	}
	if p, ok := t.args.get("spec_path"); ok {
		path, err := t.spec.l.path(p)
		if err != nil {
			return nil, nil, err
		}
		// The document is part of the app: an edit reloads it.
		t.spec.l.app.Files = append(t.spec.l.app.Files, path)
		cfg.SpecFile, specKey, n = path, "spec_path", n+1
	}
	if n != 1 {
		return nil, nil, t.Errorf("", "set exactly one of spec_dict, spec_str and spec_path")
	}

	scheme, hasScheme := t.args.get("auth_scheme")
	if hasScheme {
		v, err := scheme.value()
		if err != nil {
			return nil, nil, err
		}
		cfg.AuthScheme, _ = v.(map[string]any)
	}
	if cred, ok := t.args.get("auth_credential"); ok {
		if !hasScheme {
			return nil, nil, cred.errorf("needs auth_scheme, the scheme whose flow the client signs in with")
		}
		if err := checkAuthorizationCode(scheme); err != nil {
			return nil, nil, err
		}
		client, err := oauth2Client(cred)
		if err != nil {
			return nil, nil, err
		}
		cfg.OAuth2 = map[string]openapitool.OAuth2Client{openapitool.AuthSchemeName: client}
	}

	ts, err := openapitool.New(context.Background(), cfg)
	switch {
	case err == nil:
		return nil, ts, nil
	case errors.Is(err, openapitool.ErrInvalidConfig) && hasScheme:
		return nil, nil, scheme.errorf("%v", err)
	case errors.Is(err, openapitool.ErrInvalidConfig):
		return nil, nil, t.Errorf("", "%v", err)
	}
	return nil, nil, t.Errorf(specKey, "%v", err)
}

// checkAuthorizationCode checks that an auth_scheme an OAuth2 client
// signs in with is an oauth2 scheme with an authorizationCode flow naming
// its URLs.
func checkAuthorizationCode(scheme node) error {
	if typ := scheme.str("type"); typ != "oauth2" {
		return scheme.errorf("is of type %q: an oauth2 auth_credential needs an oauth2 scheme", typ)
	}
	flows, ok := scheme.get("flows")
	if !ok {
		return scheme.errorf("has no flows: an oauth2 auth_credential needs flows.authorizationCode")
	}
	code, ok := flows.get("authorizationCode")
	if !ok {
		return flows.errorf("has no authorizationCode flow, the one an oauth2 auth_credential signs users in with")
	}
	for _, k := range []string{"authorizationUrl", "tokenUrl"} {
		if code.str(k) == "" {
			return code.errorf("is missing the required key %s", k)
		}
	}
	return nil
}

// oauth2Client reads an auth_credential's OAuth2 client, in ADK's keys
// (snake_case or camelCase), the secret from the environment when
// client_secret_env names a variable.
func oauth2Client(cred node) (openapitool.OAuth2Client, error) {
	o, _ := cred.get("oauth2")
	either := func(snake, camel string) (node, bool) {
		if v, ok := o.get(snake); ok {
			return v, true
		}
		return o.get(camel)
	}
	str := func(snake, camel string) string {
		if v, ok := either(snake, camel); ok {
			return v.n.Value
		}
		return ""
	}
	c := openapitool.OAuth2Client{
		ClientID:     str("client_id", "clientId"),
		ClientSecret: str("client_secret", "clientSecret"),
		RedirectURL:  str("redirect_uri", "redirectUri"),
	}
	if c.ClientID == "" {
		return c, o.errorf("is missing the required key client_id")
	}
	if env, ok := o.get("client_secret_env"); ok {
		if _, literal := either("client_secret", "clientSecret"); literal {
			return c, env.errorf("is set beside client_secret: give the secret one way")
		}
		secret, set := os.LookupEnv(env.n.Value)
		if !set || secret == "" {
			return c, env.errorf("names the environment variable %s, which is not set", env.n.Value)
		}
		c.ClientSecret = secret
	}
	return c, nil
}
