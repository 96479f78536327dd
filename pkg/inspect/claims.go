package inspect

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Token is a decoded JWT. Decoding verifies nothing: VerifySignature does.
type Token struct {
	Header map[string]any `json:"header"`
	Claims map[string]any `json:"claims"`
}

// DecodeJWT splits and decodes a compact JWS.
func DecodeJWT(raw string) (*Token, error) {
	parts := strings.Split(strings.TrimSpace(raw), ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("not a JWT: %d parts separated by dots, want 3", len(parts))
	}
	t := &Token{}
	for i, dst := range []*map[string]any{&t.Header, &t.Claims} {
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[i], "="))
		if err != nil {
			return nil, fmt.Errorf("not a JWT: part %d is not base64url: %v", i+1, err)
		}
		if err := json.Unmarshal(b, dst); err != nil {
			return nil, fmt.Errorf("not a JWT: part %d is not a JSON object: %v", i+1, err)
		}
	}
	return t, nil
}

// String returns a string claim.
func (t *Token) String(name string) string {
	s, _ := t.Claims[name].(string)
	return s
}

// Expiry is the exp claim.
func (t *Token) Expiry() (time.Time, bool) {
	f, ok := t.Claims["exp"].(float64)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0).UTC(), true
}

// Audiences is the aud claim, a string or a list.
func (t *Token) Audiences() []string { return stringsOf(t.Claims["aud"]) }

func stringsOf(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, i := range x {
			if s, ok := i.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// Identity is a predicted Kubernetes user.
type Identity struct {
	Username string   `json:"username"`
	Groups   []string `json:"groups"`
	// Problems are reasons the API server would reject the token, or parts
	// of the prediction that could not be made.
	Problems []string `json:"problems,omitempty"`
}

// LegacyRules are kube-apiserver's --oidc-* flags.
type LegacyRules struct {
	IssuerURL string
	ClientID  string
	// UsernameClaim defaults to "sub".
	UsernameClaim string
	// UsernamePrefix nil means the flag is unset: "<issuer>#" unless the
	// claim is email; "-" means no prefix.
	UsernamePrefix *string
	GroupsClaim    string
	GroupsPrefix   string
}

// PredictLegacy applies the legacy flags' rules
// (https://kubernetes.io/docs/reference/access-authn-authz/authentication/#openid-connect-tokens).
func PredictLegacy(t *Token, r LegacyRules) Identity {
	var id Identity
	if r.IssuerURL != "" && t.String("iss") != r.IssuerURL {
		id.Problems = append(id.Problems, fmt.Sprintf("iss %q is not --oidc-issuer-url %q", t.String("iss"), r.IssuerURL))
	}
	if r.ClientID != "" && !slices.Contains(t.Audiences(), r.ClientID) {
		id.Problems = append(id.Problems, fmt.Sprintf("aud %v does not hold --oidc-client-id %q", t.Audiences(), r.ClientID))
	}
	claim := r.UsernameClaim
	if claim == "" {
		claim = "sub"
	}
	prefix := ""
	switch {
	case r.UsernamePrefix == nil && claim != "email":
		prefix = r.IssuerURL + "#"
	case r.UsernamePrefix != nil && *r.UsernamePrefix != "-":
		prefix = *r.UsernamePrefix
	}
	id.Username, id.Problems = usernameFrom(t, claim, prefix, id.Problems)
	if r.GroupsClaim != "" {
		id.Groups, id.Problems = groupsFrom(t, r.GroupsClaim, r.GroupsPrefix, id.Problems)
	}
	return id
}

// groupsFrom maps a groups claim (a string or a list) with a prefix; a
// missing claim is a problem, usually a scope not requested.
func groupsFrom(t *Token, claim, prefix string, problems []string) ([]string, []string) {
	var groups []string
	for _, g := range stringsOf(t.Claims[claim]) {
		groups = append(groups, prefix+g)
	}
	if _, ok := t.Claims[claim]; !ok {
		problems = append(problems, fmt.Sprintf("the token has no %q claim: request the scope that adds it (often \"groups\")", claim))
	}
	return groups, problems
}

func usernameFrom(t *Token, claim, prefix string, problems []string) (string, []string) {
	v, ok := t.Claims[claim].(string)
	if !ok || v == "" {
		return "", append(problems, fmt.Sprintf("the token has no string %q claim for the username", claim))
	}
	if claim == "email" {
		if ev, present := t.Claims["email_verified"]; present && ev != true {
			problems = append(problems, "email_verified is not true: the API server refuses an unverified email as username")
		}
	}
	return prefix + v, problems
}

// AuthenticationConfiguration is the part of apiserver.config.k8s.io's
// AuthenticationConfiguration (v1beta1 and v1) that maps claims.
type AuthenticationConfiguration struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	JWT        []struct {
		Issuer struct {
			URL                 string   `json:"url"`
			Audiences           []string `json:"audiences"`
			AudienceMatchPolicy string   `json:"audienceMatchPolicy"`
		} `json:"issuer"`
		ClaimValidationRules []struct {
			Claim         string `json:"claim"`
			RequiredValue string `json:"requiredValue"`
			Expression    string `json:"expression"`
			Message       string `json:"message"`
		} `json:"claimValidationRules"`
		ClaimMappings struct {
			Username prefixedClaim `json:"username"`
			Groups   prefixedClaim `json:"groups"`
		} `json:"claimMappings"`
		UserValidationRules []struct {
			Expression string `json:"expression"`
			Message    string `json:"message"`
		} `json:"userValidationRules"`
	} `json:"jwt"`
}

type prefixedClaim struct {
	Claim      string  `json:"claim"`
	Prefix     *string `json:"prefix"`
	Expression string  `json:"expression"`
}

// ParseAuthenticationConfiguration reads an AuthenticationConfiguration file.
func ParseAuthenticationConfiguration(b []byte) (*AuthenticationConfiguration, error) {
	var c AuthenticationConfiguration
	if err := yaml.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("parsing the AuthenticationConfiguration: %w", err)
	}
	if c.Kind != "AuthenticationConfiguration" || !strings.HasPrefix(c.APIVersion, "apiserver.config.k8s.io/") {
		return nil, errors.New("not an AuthenticationConfiguration (apiserver.config.k8s.io/v1beta1 or v1)")
	}
	return &c, nil
}

// PredictStructured applies the jwt authenticator of cfg whose issuer is
// the token's: audiences, claim validation rules, claim mappings (claim and
// prefix, or CEL expressions evaluated with the API server's own CEL
// environment) and user validation rules.
func PredictStructured(ctx context.Context, t *Token, cfg *AuthenticationConfiguration) Identity {
	var id Identity
	for _, j := range cfg.JWT {
		if j.Issuer.URL != t.String("iss") {
			continue
		}
		matched := false
		for _, a := range j.Issuer.Audiences {
			matched = matched || slices.Contains(t.Audiences(), a)
		}
		if !matched {
			id.Problems = append(id.Problems, fmt.Sprintf("aud %v holds none of the audiences %v", t.Audiences(), j.Issuer.Audiences))
		}
		for _, r := range j.ClaimValidationRules {
			switch {
			case r.Expression != "":
				ok, err := celClaimRule(ctx, r.Expression, t.Claims)
				switch {
				case err != nil:
					id.Problems = append(id.Problems, "claim validation rule: "+err.Error())
				case !ok:
					id.Problems = append(id.Problems, fmt.Sprintf("claim validation rule fails: %s%s", r.Expression, messageOf(r.Message)))
				}
			case fmt.Sprint(t.Claims[r.Claim]) != r.RequiredValue:
				id.Problems = append(id.Problems, fmt.Sprintf("claim validation rule fails: %s must be %q", r.Claim, r.RequiredValue))
			}
		}
		m := j.ClaimMappings
		if m.Username.Expression != "" {
			u, err := celString(ctx, m.Username.Expression, t.Claims)
			if err != nil {
				id.Problems = append(id.Problems, "username mapping: "+err.Error())
			}
			id.Username = u
		} else {
			prefix := ""
			if m.Username.Prefix != nil {
				prefix = *m.Username.Prefix
			}
			id.Username, id.Problems = usernameFrom(t, m.Username.Claim, prefix, id.Problems)
		}
		switch {
		case m.Groups.Expression != "":
			groups, err := celStrings(ctx, m.Groups.Expression, t.Claims)
			if err != nil {
				id.Problems = append(id.Problems, "groups mapping: "+err.Error())
			}
			id.Groups = groups
		case m.Groups.Claim != "":
			prefix := ""
			if m.Groups.Prefix != nil {
				prefix = *m.Groups.Prefix
			}
			id.Groups, id.Problems = groupsFrom(t, m.Groups.Claim, prefix, id.Problems)
		}
		for _, r := range j.UserValidationRules {
			ok, err := celUserRule(ctx, r.Expression, id)
			switch {
			case err != nil:
				id.Problems = append(id.Problems, "user validation rule: "+err.Error())
			case !ok:
				id.Problems = append(id.Problems, fmt.Sprintf("user validation rule fails: %s%s", r.Expression, messageOf(r.Message)))
			}
		}
		return id
	}
	id.Problems = append(id.Problems, fmt.Sprintf("no jwt authenticator of the configuration has the issuer %q", t.String("iss")))
	return id
}

// Compare lists the differences between a predicted identity and the API
// server's. Groups the server adds to everyone (system:authenticated) are
// not differences.
func Compare(predicted Identity, username string, groups []string) []string {
	var diffs []string
	if predicted.Username != username {
		diffs = append(diffs, fmt.Sprintf("username: predicted %q, the API server says %q", predicted.Username, username))
	}
	for _, g := range predicted.Groups {
		if !slices.Contains(groups, g) {
			diffs = append(diffs, fmt.Sprintf("group %q predicted, the API server does not report it", g))
		}
	}
	for _, g := range groups {
		if g != "system:authenticated" && !slices.Contains(predicted.Groups, g) {
			diffs = append(diffs, fmt.Sprintf("group %q reported by the API server, not predicted from the token", g))
		}
	}
	return diffs
}

func messageOf(m string) string {
	if m == "" {
		return ""
	}
	return " (" + m + ")"
}
