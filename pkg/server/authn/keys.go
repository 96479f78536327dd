package authn

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	jose "gopkg.in/go-jose/go-jose.v2"
)

// keySet is go-oidc's (v2) KeySet, which k8s.io/apiserver's authenticator
// takes in place of an issuer's remote JWKS.
type keySet interface {
	VerifySignature(ctx context.Context, jwt string) ([]byte, error)
}

// staticKeySet verifies with fixed public keys, as go-oidc's remote key
// set does with fetched ones: a kid in the token selects the key with that
// kid; without one every key is tried.
type staticKeySet []jose.JSONWebKey

func (s staticKeySet) VerifySignature(_ context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw)
	if err != nil {
		return nil, fmt.Errorf("malformed jwt: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("the jwt must have exactly one signature")
	}
	kid := jws.Signatures[0].Header.KeyID
	for _, k := range s {
		if kid != "" && k.KeyID != "" && k.KeyID != kid {
			continue
		}
		if payload, err := jws.Verify(k.Key); err == nil {
			return payload, nil
		}
	}
	return nil, errors.New("failed to verify id token signature with the static keys")
}

// unverifiedKeySet checks no signature: it only returns the payload.
type unverifiedKeySet struct{}

func (unverifiedKeySet) VerifySignature(_ context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw)
	if err != nil {
		return nil, fmt.Errorf("malformed jwt: %w", err)
	}
	return jws.UnsafePayloadWithoutVerification(), nil
}

// parseStaticKeys reads a JWKS document or PEM public keys/certificates.
func parseStaticKeys(b []byte) (staticKeySet, error) {
	if strings.HasPrefix(strings.TrimSpace(string(b)), "{") {
		var set jose.JSONWebKeySet
		if err := json.Unmarshal(b, &set); err != nil {
			return nil, fmt.Errorf("the signing keys are not a JWKS document: %w", err)
		}
		var out staticKeySet
		for _, k := range set.Keys {
			if !k.IsPublic() {
				return nil, fmt.Errorf("the JWKS key %q is not a public key: publish only public keys", k.KeyID)
			}
			if k.Use == "" || k.Use == "sig" {
				out = append(out, k)
			}
		}
		if len(out) == 0 {
			return nil, errors.New("the JWKS document has no signing key")
		}
		return out, nil
	}
	var out staticKeySet
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		switch blk.Type {
		case "PUBLIC KEY":
			k, err := x509.ParsePKIXPublicKey(blk.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parsing a PEM public key: %w", err)
			}
			out = append(out, jose.JSONWebKey{Key: k})
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parsing a PEM certificate: %w", err)
			}
			out = append(out, jose.JSONWebKey{Key: c.PublicKey})
		default:
			return nil, fmt.Errorf("unexpected PEM block %q: give PUBLIC KEY or CERTIFICATE blocks, or a JWKS "+
				"document", blk.Type)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no signing key found: give a JWKS document or PEM public keys")
	}
	return out, nil
}
