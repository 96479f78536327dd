package oidctest

import (
	"crypto"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

// AssertionType is client_assertion_type for a JWT (RFC 7523 §2.2).
const AssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// Assertions authenticates clients by their assertions instead of a
// secret, as the test providers' token endpoints do: self-signed ones
// (private_key_jwt, RFC 7523 §3: iss = sub = the client, signed by a key
// registered for it, found by kid, a jti used once) and federated ones (a
// token of a trusted issuer whose sub is registered for the client, as
// Keycloak's federated client authentication and Entra ID's federated
// credentials take a Kubernetes service-account token: no jti required and
// the same token accepted again during its life, since a projected token
// is read afresh for each request). Both: aud one of the endpoint's
// values, exp present and not past (10 s of skew). The zero value is ready.
type Assertions struct {
	mu          sync.Mutex
	keys        map[string]clientKey // by kid
	federations []Federation
	seen        map[string]bool
	refusals    []string
	received    []string
}

type clientKey struct {
	clientID string
	pub      crypto.PublicKey
}

// Federation is a federated credential a client is registered with:
// tokens of Issuer (verified with Keys) whose sub is Subject
// authenticate ClientID.
type Federation struct {
	ClientID, Issuer, Subject string
	Keys                      []crypto.PublicKey
}

// SetClientKey registers a public key of clientID for private_key_jwt,
// found by its RFC 7638 thumbprint (the kid the plugin sends).
func (a *Assertions) SetClientKey(clientID string, pub crypto.PublicKey) error {
	t, err := (&jose.JSONWebKey{Key: pub}).Thumbprint(crypto.SHA256)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.keys == nil {
		a.keys = map[string]clientKey{}
	}
	a.keys[b64(t)] = clientKey{clientID: clientID, pub: pub}
	return nil
}

// TrustFederation registers a federated credential.
func (a *Assertions) TrustFederation(f Federation) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.federations = append(a.federations, f)
}

// Refusals says why each refused assertion was, in order.
func (a *Assertions) Refusals() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.refusals)
}

// Received are the client assertions presented, in order (a test's list
// of secrets: a signed assertion authenticates as the client until it
// expires).
func (a *Assertions) Received() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.received)
}

// Verify checks the client_assertion of a token request's form, aud
// having to name one of audiences, and returns the client it
// authenticates; a refusal is remembered (Refusals).
func (a *Assertions) Verify(form url.Values, audiences ...string) (string, error) {
	if v := form.Get("client_assertion"); v != "" {
		a.mu.Lock()
		a.received = append(a.received, v)
		a.mu.Unlock()
	}
	client, err := a.verify(form, audiences)
	if err != nil {
		a.mu.Lock()
		a.refusals = append(a.refusals, err.Error())
		a.mu.Unlock()
	}
	return client, err
}

func (a *Assertions) verify(form url.Values, audiences []string) (string, error) {
	if typ := form.Get("client_assertion_type"); typ != AssertionType {
		return "", fmt.Errorf("client_assertion_type %q", typ)
	}
	assertion := form.Get("client_assertion")
	var claims jwt.RegisteredClaims
	unverified, _, err := jwt.NewParser().ParseUnverified(assertion, &claims)
	if err != nil {
		return "", fmt.Errorf("not a JWT: %v", err)
	}
	a.mu.Lock()
	keys, federations := a.keys, slices.Clone(a.federations)
	a.mu.Unlock()
	var client string
	var candidates []crypto.PublicKey
	selfSigned := claims.Issuer == claims.Subject
	if selfSigned {
		kid, _ := unverified.Header["kid"].(string)
		k, ok := keys[kid]
		if !ok || k.clientID != claims.Issuer {
			return "", errors.New("no key of the client matches the assertion's kid")
		}
		client, candidates = k.clientID, []crypto.PublicKey{k.pub}
	} else {
		i := slices.IndexFunc(federations, func(f Federation) bool { return f.Issuer == claims.Issuer })
		if i < 0 {
			return "", fmt.Errorf("iss %q is neither the client nor a federated issuer", claims.Issuer)
		}
		j := slices.IndexFunc(federations, func(f Federation) bool { return f.Issuer == claims.Issuer && f.Subject == claims.Subject })
		if j < 0 {
			return "", fmt.Errorf("sub %q is not the federated subject", claims.Subject)
		}
		client, candidates = federations[j].ClientID, federations[j].Keys
	}
	if id := form.Get("client_id"); id != "" && id != client {
		return "", fmt.Errorf("the assertion authenticates %q, not client_id %q", client, id)
	}
	var verr error
	for _, k := range candidates {
		_, verr = jwt.ParseWithClaims(assertion, &claims, func(*jwt.Token) (any, error) { return k, nil },
			jwt.WithValidMethods([]string{"RS256", "ES256", "ES384", "ES512"}), jwt.WithExpirationRequired(), jwt.WithLeeway(10*time.Second))
		if verr == nil {
			break
		}
	}
	if verr != nil {
		return "", fmt.Errorf("invalid assertion: %v", verr)
	}
	if !slices.ContainsFunc(claims.Audience, func(aud string) bool { return slices.Contains(audiences, aud) }) {
		return "", fmt.Errorf("aud %v names none of %v", claims.Audience, audiences)
	}
	if !selfSigned {
		return client, nil
	}
	if claims.ID == "" {
		return "", errors.New("no jti")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seen == nil {
		a.seen = map[string]bool{}
	}
	if a.seen[claims.Issuer+"\x00"+claims.ID] {
		return "", fmt.Errorf("jti %q replayed", claims.ID)
	}
	a.seen[claims.Issuer+"\x00"+claims.ID] = true
	return client, nil
}
