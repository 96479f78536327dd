//go:build release

package release

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// githubIssuer is GitHub Actions' OIDC issuer, the one docs/install.md's
// keyless block names.
const githubIssuer = "https://token.actions.githubusercontent.com"

// keylessSigner stands for Sigstore's Fulcio and its certificate
// transparency log, which are out of reach here: a CA and a log of the
// test's, named in a trusted root (the format of Sigstore's
// trusted_root.json), issuing a ten-minute code-signing certificate as
// Fulcio does for a GitHub Actions workflow: the workflow's URI as its
// SAN, the OIDC issuer (1.3.6.1.4.1.57264.1.1 and .1.8), the event that
// ran it and its repository (.1.2, .1.5) in Fulcio's extensions, an
// embedded SCT.
type keylessSigner struct {
	leaf        *ecdsa.PrivateKey
	certificate []byte
	trustedRoot []byte
}

func newKeylessSigner(t *testing.T, identity, issuer, repository, trigger string) *keylessSigner {
	t.Helper()
	must := func(err error) { require.NoError(t, err) }
	now := time.Now().UTC().Truncate(time.Second)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	logKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{Organization: []string{"release-test"}, CommonName: "release-test fulcio"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	must(err)
	ca, err := x509.ParseCertificate(caDER)
	must(err)
	uri, err := url.Parse(identity)
	must(err)
	issuerUTF8, err := asn1.MarshalWithParams(issuer, "utf8")
	must(err)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), NotBefore: now.Add(-time.Minute), NotAfter: now.Add(10 * time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}, URIs: []*url.URL{uri},
		ExtraExtensions: []pkix.Extension{
			{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}, Value: []byte(issuer)},
			{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}, Value: issuerUTF8},
			{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 2}, Value: []byte(trigger)},
			{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 5}, Value: []byte(repository)},
		}}
	// The log's SCT signs the precertificate (RFC 6962 §3.2): the
	// certificate without the SCT list.
	preDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	must(err)
	pre, err := x509.ParseCertificate(preDER)
	must(err)
	logSPKI, err := x509.MarshalPKIXPublicKey(&logKey.PublicKey)
	must(err)
	logID := sha256.Sum256(logSPKI)
	issuerKeyHash := sha256.Sum256(ca.RawSubjectPublicKeyInfo)
	u16 := func(b *bytes.Buffer, n int) { b.Write([]byte{byte(n >> 8), byte(n)}) }
	ts := uint64(now.UnixMilli())
	var signed bytes.Buffer
	signed.Write([]byte{0, 0}) // v1, certificate_timestamp
	_ = binary.Write(&signed, binary.BigEndian, ts)
	u16(&signed, 1) // precert_entry
	signed.Write(issuerKeyHash[:])
	n := len(pre.RawTBSCertificate)
	signed.Write([]byte{byte(n >> 16), byte(n >> 8), byte(n)})
	signed.Write(pre.RawTBSCertificate)
	u16(&signed, 0)
	digest := sha256.Sum256(signed.Bytes())
	sctSig, err := ecdsa.SignASN1(rand.Reader, logKey, digest[:])
	must(err)
	var sct, inner, list bytes.Buffer
	sct.WriteByte(0)
	sct.Write(logID[:])
	_ = binary.Write(&sct, binary.BigEndian, ts)
	u16(&sct, 0)
	sct.Write([]byte{4, 3}) // sha256, ecdsa
	u16(&sct, len(sctSig))
	sct.Write(sctSig)
	u16(&inner, sct.Len())
	inner.Write(sct.Bytes())
	u16(&list, inner.Len())
	list.Write(inner.Bytes())
	sctExt, err := asn1.Marshal(list.Bytes())
	must(err)
	leafTmpl.ExtraExtensions = append(leafTmpl.ExtraExtensions, pkix.Extension{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 11129, 2, 4, 2}, Value: sctExt})
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	must(err)

	b64 := base64.StdEncoding.EncodeToString
	start := now.Add(-time.Hour).Format(time.RFC3339)
	root, err := json.Marshal(map[string]any{
		"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1", "tlogs": []any{}, "timestampAuthorities": []any{},
		"certificateAuthorities": []any{map[string]any{
			"subject": map[string]any{"organization": "release-test", "commonName": "release-test fulcio"}, "uri": "https://fulcio.invalid",
			"certChain": map[string]any{"certificates": []any{map[string]any{"rawBytes": b64(caDER)}}}, "validFor": map[string]any{"start": start},
		}},
		"ctlogs": []any{map[string]any{
			"baseUrl": "https://ctfe.invalid", "hashAlgorithm": "SHA2_256", "logId": map[string]any{"keyId": b64(logID[:])},
			"publicKey": map[string]any{"rawBytes": b64(logSPKI), "keyDetails": "PKIX_ECDSA_P256_SHA_256", "validFor": map[string]any{"start": start}},
		}},
	})
	must(err)
	return &keylessSigner{leaf: leafKey, certificate: leafDER, trustedRoot: root}
}

// sign is the Sigstore bundle (v0.3) of a keyless signature of blob: the
// certificate and the message signature, no transparency log entry.
func (k *keylessSigner) sign(t *testing.T, blob []byte) []byte {
	t.Helper()
	digest := sha256.Sum256(blob)
	sig, err := ecdsa.SignASN1(rand.Reader, k.leaf, digest[:])
	require.NoError(t, err)
	b64 := base64.StdEncoding.EncodeToString
	b, err := json.Marshal(map[string]any{
		"mediaType":            "application/vnd.dev.sigstore.bundle.v0.3+json",
		"verificationMaterial": map[string]any{"certificate": map[string]any{"rawBytes": b64(k.certificate)}},
		"messageSignature":     map[string]any{"messageDigest": map[string]any{"algorithm": "SHA2_256", "digest": b64(digest[:])}, "signature": b64(sig)},
	})
	require.NoError(t, err)
	return b
}

// TestKeylessVerifyAsDocumented: docs/install.md's keyless block, as
// written (the version, and the offline flags with a trusted root naming
// the test's CA and log instead of Sigstore's: Fulcio and Rekor are out of
// reach here, so what Rekor adds, a record made while the ten-minute
// certificate was valid, is not tested), verifies checksums.txt signed as
// the release workflow, pushed at the snapshot's tag; the same signature
// by another workflow, on a branch, from another issuer, for another
// repository that called the workflow, or run by hand is refused, naming
// what differs. The workflow the identity names exists, only a pushed tag
// runs it, and only its sign job, which builds nothing, holds an OIDC
// token.
func TestKeylessVerifyAsDocumented(t *testing.T) {
	dist, tools := os.Getenv("KI_DIST"), os.Getenv("KI_TOOLS")
	require.True(t, dist != "" && tools != "", "KI_DIST, KI_TOOLS: run through make release-test")
	archive, version := hostArchive(t, dist)
	block := byContent(t, documented(t), "docs/install.md", "--certificate-identity")
	identity := regexp.MustCompile(`--certificate-identity "([^"]+)"`).FindStringSubmatch(block.Body)
	require.NotNil(t, identity, "the block names the identity")
	workflow := regexp.MustCompile(`^https://github\.com/kubectl-impersonate/kubectl-impersonate/(\.github/workflows/[^@]+)@refs/tags/v\$\{version\}$`).FindStringSubmatch(identity[1])
	require.NotNil(t, workflow, "the identity is a workflow of the repository at the release's tag: %s", identity[1])
	for _, flag := range []string{"--certificate-oidc-issuer " + githubIssuer, "--certificate-github-workflow-repository=kubectl-impersonate/kubectl-impersonate", "--certificate-github-workflow-trigger=push"} {
		assert.Contains(t, block.Body, flag)
	}
	checkReleaseWorkflow(t, filepath.Join(repoRoot, workflow[1]))
	documentedIdentity := strings.ReplaceAll(identity[1], "${version}", version)

	checksums, err := os.ReadFile(filepath.Join(dist, "checksums.txt"))
	require.NoError(t, err)
	const repo = "kubectl-impersonate/kubectl-impersonate"
	for _, tt := range []struct {
		name, identity, issuer, repository, trigger, want string
	}{
		{"the release workflow pushed at the tag", documentedIdentity, githubIssuer, repo, "push", ""},
		{"another workflow of the repository", strings.Replace(documentedIdentity, "release.yaml", "ci.yaml", 1), githubIssuer, repo, "push", "expected SAN value"},
		{"the release workflow on a branch", strings.Replace(documentedIdentity, "refs/tags/v"+version, "refs/heads/main", 1), githubIssuer, repo, "push", "expected SAN value"},
		{"another issuer", documentedIdentity, "https://accounts.google.com", repo, "push", "expected issuer value"},
		{"called by another repository's workflow", documentedIdentity, githubIssuer, "mallory/fork", "push", "no matching CertificateIdentity"},
		{"run by hand", documentedIdentity, githubIssuer, repo, "workflow_dispatch", "no matching CertificateIdentity"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			signer := newKeylessSigner(t, tt.identity, tt.issuer, tt.repository, tt.trigger)
			dir := t.TempDir()
			copyFile(t, archive, filepath.Join(dir, filepath.Base(archive)))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "checksums.txt"), checksums, 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "checksums.txt.sigstore.json"), signer.sign(t, checksums), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "offline-trusted-root.json"), signer.trustedRoot, 0o644))
			out, ok := runBlock(t, dir, tools, substitute(block.Body, version, "", "", ""))
			if tt.want == "" {
				assert.True(t, ok, "%s, as documented, fails: %s", block.Where(), out)
				assert.Contains(t, out, "Verified OK")
				assert.Contains(t, out, filepath.Base(archive)+": OK")
				return
			}
			assert.False(t, ok, "%s verified: %s", tt.name, out)
			assert.Contains(t, out, tt.want)
			t.Logf("%s: %s", tt.name, lastLine(out))
		})
	}
}

// checkReleaseWorkflow: the release workflow runs only when a v* tag is
// pushed, holds no OIDC token but in its sign job, and that job builds
// nothing (it signs what the build job made).
func checkReleaseWorkflow(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err, "the workflow the identity names")
	var wf struct {
		On          map[string]any    `json:"on"`
		Permissions map[string]string `json:"permissions"`
		Jobs        map[string]struct {
			Permissions map[string]string `json:"permissions"`
			Steps       []struct {
				Run  string `json:"run"`
				Uses string `json:"uses"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	require.NoError(t, yaml.Unmarshal(b, &wf))
	if wf.On == nil {
		// YAML 1.1, which sigs.k8s.io/yaml reads, takes a bare on for true.
		var raw struct {
			On map[string]any `json:"true"`
		}
		require.NoError(t, yaml.Unmarshal(b, &raw))
		wf.On = raw.On
	}
	assert.Equal(t, map[string]any{"push": map[string]any{"tags": []any{"v*"}}}, wf.On, "only a pushed tag runs it")
	assert.NotContains(t, wf.Permissions, "id-token", "no OIDC token for every job")
	var signers []string
	for name, job := range wf.Jobs {
		if job.Permissions["id-token"] == "write" {
			signers = append(signers, name)
			for _, s := range job.Steps {
				assert.NotContains(t, s.Run, "make", "the job holding the OIDC token builds nothing: %s", s.Run)
			}
		}
		for _, s := range job.Steps {
			if s.Uses != "" {
				assert.Regexp(t, `@[0-9a-f]{40}$`, s.Uses, "actions pinned by commit")
			}
		}
	}
	assert.Equal(t, []string{"sign"}, signers, "one job may sign")
}
