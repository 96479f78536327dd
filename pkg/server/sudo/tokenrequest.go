package sudo

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// MinTokenSeconds is kube-apiserver's shortest service-account token
// (TokenRequest's expirationSeconds minimum, 10 minutes).
const MinTokenSeconds = 600

// extendedSeconds is the expirationSeconds kube-apiserver extends to a
// year for a token bound to a Pod (--service-account-extend-token-expiration,
// on by default: token.WarnOnlyBoundTokenExpirationSeconds): a token made
// under a grant never asks for it.
const extendedSeconds = 3607

// defaultTokenSeconds is kube-apiserver's expirationSeconds when none is
// given (one hour).
const defaultTokenSeconds = 3600

// maxTokenRequest bounds the TokenRequest body the proxy reads.
const maxTokenRequest = 1 << 20

var tokenCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	_ = authnv1.AddToScheme(s)
	return serializer.NewCodecFactory(s)
}()

// ClampTokenRequest makes r's TokenRequest (serviceaccounts/token) end by
// ends: its expirationSeconds lowered to what is left of the grant at now
// (never 3607, which kube-apiserver would extend to a year), or ErrRefused
// when less than kube-apiserver's 10-minute minimum is left, or when the
// body cannot be read (JSON and protobuf are).
func ClampTokenRequest(r *http.Request, ends, now time.Time) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		mt = "application/json"
	}
	info, ok := runtime.SerializerInfoForMediaType(tokenCodecs.SupportedMediaTypes(), mt)
	if !ok {
		return fmt.Errorf("%w: a TokenRequest under a sudo grant is read as JSON or protobuf, not %s", ErrRefused, mt)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxTokenRequest+1))
	_ = r.Body.Close()
	if err != nil || len(body) > maxTokenRequest {
		return fmt.Errorf("%w: the TokenRequest could not be read (at most 1 MiB)", ErrRefused)
	}
	var tr authnv1.TokenRequest
	if _, _, err := info.Serializer.Decode(body, nil, &tr); err != nil {
		return fmt.Errorf("%w: the TokenRequest could not be read: %v", ErrRefused, err)
	}
	left := int64(ends.Sub(now) / time.Second)
	asked := int64(defaultTokenSeconds)
	if tr.Spec.ExpirationSeconds != nil {
		asked = *tr.Spec.ExpirationSeconds
	}
	switch {
	case left < MinTokenSeconds && asked > left:
		return fmt.Errorf("%w: the grant ends at %s, in %ds: a service-account token lives at least %ds, and "+
			"would outlive it", ErrRefused, ends.UTC().Format(time.RFC3339), max(left, 0), MinTokenSeconds)
	case asked > left:
		asked = left
	}
	if asked == extendedSeconds {
		asked--
	}
	tr.Spec.ExpirationSeconds = &asked
	tr.APIVersion, tr.Kind = authnv1.SchemeGroupVersion.String(), "TokenRequest"
	var out bytes.Buffer
	if err := info.Serializer.Encode(&tr, &out); err != nil {
		return fmt.Errorf("%w: the TokenRequest could not be written: %v", ErrRefused, err)
	}
	r.Body = io.NopCloser(bytes.NewReader(out.Bytes()))
	r.ContentLength = int64(out.Len())
	r.Header.Set("Content-Length", fmt.Sprint(out.Len()))
	return nil
}
