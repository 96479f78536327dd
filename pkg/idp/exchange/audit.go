package exchange

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// Auditor writes one line per exchange step: time, user, region, step and
// outcome, never a token. Lines go to W (stderr at -v ≥ 1) and, as JSON,
// appended to File (mode 0600).
type Auditor struct {
	W    io.Writer
	File string
	Now  func() time.Time

	mu sync.Mutex
}

// AuditRecord is one line of the audit log.
type AuditRecord struct {
	Time      time.Time `json:"time"`
	Exchange  string    `json:"exchange"`
	UserEmail string    `json:"user_email,omitempty"`
	Subject   string    `json:"requested_subject,omitempty"`
	Region    string    `json:"region,omitempty"`
	Step      string    `json:"step"`
	Outcome   string    `json:"outcome"`
	Error     string    `json:"error,omitempty"`
}

// Record writes r; an audit file that cannot be written is reported on W
// and does not fail the exchange.
func (a *Auditor) Record(r AuditRecord) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	r.Time = now().UTC()
	if a.W != nil {
		line := fmt.Sprintf("audit: %s exchange=%s step=%s outcome=%s", r.Time.Format(time.RFC3339), r.Exchange, r.Step,
			r.Outcome)
		if r.UserEmail != "" {
			line += " user_email=" + r.UserEmail
		}
		if r.Subject != "" {
			line += " requested_subject=" + r.Subject
		}
		if r.Region != "" {
			line += " region=" + r.Region
		}
		if r.Error != "" {
			line += fmt.Sprintf(" error=%q", r.Error)
		}
		_, _ = fmt.Fprintln(a.W, logging.Escape(line)) // the email and subject are the settings' text
	}
	if a.File == "" {
		return
	}
	b, _ := json.Marshal(r)
	b = logging.EscapeJSON(b)
	f, err := os.OpenFile(a.File, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		_, err = f.Write(append(b, '\n'))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil && a.W != nil {
		logging.Noticef(a.W, "writing the audit log %s: %v", a.File, err)
	}
}

func outcome(err error) (string, string) {
	if err != nil {
		return "error", err.Error()
	}
	return "ok", ""
}
