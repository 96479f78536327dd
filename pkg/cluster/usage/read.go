package usage

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// maxLine bounds one line of a log: a RequestResponse event holds whole
// objects, but none is near this.
const maxLine = 64 << 20

// ReadOptions selects the requests of a log.
type ReadOptions struct {
	// User is whose requests are read: the user the authorizer was asked
	// about (the impersonated one, for a request that impersonates); and the
	// impersonate checks of the requests User sent as another identity. ""
	// reads a recording's: every request not sent as another identity,
	// and the impersonate checks.
	User string
}

// Read reads a log of audit.k8s.io/v1 Events, one JSON object a line (as
// kube-apiserver's --audit-log-path writes them, format json, and record
// does), or the impersonating proxy's --audit-log: the requests o selects, one per audit ID (the response's stage
// where the log has it, the stage the response started otherwise).
func Read(r io.Reader, o ReadOptions) ([]Request, error) {
	rd := bufio.NewReaderSize(r, 1<<20)
	type entry struct {
		stage auditv1.Stage
		reqs  []Request
	}
	var order []*entry
	byID := map[string]*entry{}
	for n := 1; ; n++ {
		line, err := readLine(rd)
		if errors.Is(err, io.EOF) && len(line) == 0 {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("reading line %d: %w", n, err)
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var kind struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(line, &kind); err != nil {
			return nil, fmt.Errorf("line %d is not a JSON audit event (kube-apiserver's --audit-log-format=json): %w",
				n, err)
		}
		if kind.Kind == "" {
			// A line of the impersonating proxy's --audit-log.
			reqs, err := proxyLine(line, o)
			if err == nil {
				err = checkAll(reqs)
			}
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			order = append(order, &entry{stage: auditv1.StageResponseComplete, reqs: reqs})
			continue
		}
		var ev auditv1.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("line %d is not a JSON audit event (kube-apiserver's --audit-log-format=json): %w",
				n, err)
		}
		if ev.Kind != "Event" || ev.APIVersion != auditv1.SchemeGroupVersion.String() {
			return nil, fmt.Errorf("line %d is a %q of %q, not an audit.k8s.io/v1 Event", n, ev.Kind, ev.APIVersion)
		}
		if ev.Stage == auditv1.StageRequestReceived {
			continue // no answer yet: the later stages of its audit ID have it
		}
		e := &entry{stage: ev.Stage, reqs: selected(ev, o)}
		if err := checkAll(e.reqs); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if prev, ok := byID[string(ev.AuditID)]; ok && ev.AuditID != "" {
			// One request: the stage of its response replaces the stage it
			// started streaming at (a watch, logs -f, exec).
			if prev.stage == auditv1.StageResponseStarted {
				*prev = *e
			}
			continue
		}
		if ev.AuditID != "" {
			byID[string(ev.AuditID)] = e
		}
		order = append(order, e)
	}
	var out []Request
	for _, e := range order {
		out = append(out, e.reqs...)
	}
	return out, nil
}

// proxyLine is the request of a line of the impersonating proxy's audit log
// (kubectl-impersonate proxy --audit-log) when o selects its user: the
// attributes the cluster's authorizer was asked, as that user. The proxy
// cannot tell an admission's 403 from the authorizer's: every 403 is
// taken as refused (nothing is granted for it).
func proxyLine(line []byte, o ReadOptions) ([]Request, error) {
	var l struct {
		User    string   `json:"user"`
		Code    int      `json:"code"`
		Request *Request `json:"request"`
	}
	if err := json.Unmarshal(line, &l); err != nil {
		return nil, err
	}
	if l.Request == nil {
		if l.User == "" {
			return nil, nil // refused before it was authenticated: no one's
		}
		return nil, errors.New("a proxy's line without the request's attributes (a proxy older than " +
			"least-privilege): record the use again with a newer proxy")
	}
	if o.User != "" && l.User != o.User {
		return nil, nil
	}
	r := *l.Request
	r.User, r.Code = l.User, l.Code
	r.Refused = l.Code == 401 || l.Code == 403
	return []Request{r}, nil
}

// checkAll refuses a request no API server could have authorized as it
// reads: a namespace that is not a DNS label, an API group that is not a
// DNS subdomain, a verb that is not one, or a name, resource or path with
// a character that may not reach a terminal as it is (a control, a
// newline, a bidirectional override). A log written by someone else must
// not put such text in the YAML kubectl applies, or in the comments
// above it.
func checkAll(reqs []Request) error {
	for _, r := range reqs {
		if err := check(r); err != nil {
			return err
		}
	}
	return nil
}

func check(r Request) error {
	if r.Namespace != "" && len(validation.IsDNS1123Label(r.Namespace)) > 0 {
		return fmt.Errorf("the namespace %s is not one", logging.OneLine(strconv.Quote(r.Namespace), 100))
	}
	if r.APIGroup != "" && len(validation.IsDNS1123Subdomain(r.APIGroup)) > 0 {
		return fmt.Errorf("the API group %s is not one", logging.OneLine(strconv.Quote(r.APIGroup), 100))
	}
	if !isVerb(r.Verb) {
		return fmt.Errorf("the verb %s is not one", logging.OneLine(strconv.Quote(r.Verb), 100))
	}
	for what, v := range map[string]string{"resource": r.Resource, "subresource": r.Subresource, "name": r.Name,
		"path": r.Path} {
		if len(v) > 1024 || strings.ContainsFunc(v, logging.Unsafe) || !utf8.ValidString(v) {
			return fmt.Errorf("the %s %s holds characters no API server takes", what,
				logging.OneLine(strconv.Quote(v), 100))
		}
	}
	return nil
}

// isVerb tells a verb as kube-apiserver's authorizer gets one: a
// lowercase HTTP method or an API verb, impersonate:MODE's included, or *.
func isVerb(v string) bool {
	if v == "*" {
		return true
	}
	if v == "" || len(v) > 64 || v[0] < 'a' || v[0] > 'z' {
		return false
	}
	return !strings.ContainsFunc(v, func(r rune) bool { return (r < 'a' || r > 'z') && r != ':' && r != '-' })
}

// readLine is the next line of rd, without its end; an error past maxLine.
func readLine(rd *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := rd.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("a line is longer than %d MiB", maxLine>>20)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// selected is what ev holds of the requests o selects.
func selected(ev auditv1.Event, o ReadOptions) []Request {
	impersonated := ""
	if ev.ImpersonatedUser != nil {
		impersonated = ev.ImpersonatedUser.Username
	}
	switch {
	case o.User == "" && impersonated == "", impersonated != "" && impersonated == o.User,
		impersonated == "" && ev.User.Username == o.User:
		return []Request{fromEvent(ev)}
	case impersonated != "" && o.User != "" && ev.User.Username == o.User:
		// Sent by User as another identity: the impersonate checks were User's.
		return impersonationOf(*ev.ImpersonatedUser, ev.ResponseStatus != nil && ev.ResponseStatus.Code == 401)
	}
	return nil
}

// impersonationOf is the impersonate checks of acting as u.
func impersonationOf(u authnv1.UserInfo, refused bool) []Request {
	h := map[string][]string{authnv1.ImpersonateUserHeader: {u.Username}}
	if len(u.Groups) > 0 {
		h[authnv1.ImpersonateGroupHeader] = u.Groups
	}
	if u.UID != "" {
		h[authnv1.ImpersonateUIDHeader] = []string{u.UID}
	}
	for k, v := range u.Extra {
		h[authnv1.ImpersonateUserExtraHeaderPrefix+url.PathEscape(k)] = v
	}
	reqs := Impersonation(h)
	for i := range reqs {
		reqs[i].User = ""
		reqs[i].Refused = refused
	}
	return reqs
}

// fromEvent is the request ev records.
func fromEvent(ev auditv1.Event) Request {
	r := Request{User: ev.User.Username, Verb: ev.Verb}
	if ev.ImpersonatedUser != nil {
		r.User = ev.ImpersonatedUser.Username
	}
	switch {
	case ev.ResponseStatus != nil:
		r.Code = int(ev.ResponseStatus.Code)
	case ev.Stage == auditv1.StagePanic:
		r.Code = 500
	default:
		r.Code = 200 // kube-apiserver logs a response without a status as 200
	}
	// kube-apiserver's authorizer writes "forbid" on a 403 it refused;
	// record writes it on a request that got no answer too.
	r.Refused = r.Code == 401 || ev.Annotations[decisionAnnotation] == "forbid"
	if ev.ObjectRef == nil {
		u, err := url.Parse(ev.RequestURI)
		if err == nil {
			r.Path = u.Path
		} else {
			r.Path = ev.RequestURI
		}
		return r
	}
	ref := ev.ObjectRef
	r.APIGroup, r.Resource, r.Subresource, r.Namespace, r.Name = ref.APIGroup, ref.Resource, ref.Subresource,
		ref.Namespace, ref.Name
	if r.Verb == "create" && r.Subresource == "" {
		// The audit log names the object created, from the response; the
		// authorizer saw no name (the URL has none).
		r.Name = ""
	}
	return r
}
