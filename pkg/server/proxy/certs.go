package proxy

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// CertReloader serves a certificate and key from files and loads them
// again when either file changes (checked at most once a second, on a
// handshake), so that a rotated certificate (cert-manager, a Secret
// update) is served without a restart. A pair that fails to load keeps
// the previous one in service.
type CertReloader struct {
	CertFile, KeyFile string
	// OnError reports a failed reload.
	OnError func(error)

	mu        sync.Mutex
	cert      *tls.Certificate
	stamp     string
	lastCheck time.Time
}

// Load reads the pair once; it must succeed before serving.
func (c *CertReloader) Load() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loadLocked()
}

// loadLocked reads the pair; it must be called with c.mu held.
func (c *CertReloader) loadLocked() error {
	stamp, err := c.stampOf()
	if err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return fmt.Errorf("loading the serving certificate: %w", err)
	}
	c.cert, c.stamp = &cert, stamp
	return nil
}

func (c *CertReloader) stampOf() (string, error) {
	var s string
	for _, f := range []string{c.CertFile, c.KeyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return "", fmt.Errorf("reading the serving certificate: %w", err)
		}
		s += fmt.Sprintf("%d/%d;", fi.ModTime().UnixNano(), fi.Size())
	}
	return s, nil
}

// GetCertificate is a tls.Config.GetCertificate.
func (c *CertReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); now.Sub(c.lastCheck) >= time.Second {
		c.lastCheck = now
		if stamp, err := c.stampOf(); err == nil && stamp != c.stamp {
			if err := c.loadLocked(); err != nil && c.OnError != nil {
				c.OnError(err)
			}
		}
	}
	if c.cert == nil {
		return nil, fmt.Errorf("no serving certificate loaded")
	}
	return c.cert, nil
}
