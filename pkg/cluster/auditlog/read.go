package auditlog

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
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
	// Sealed reads a recording: an event counts only in a segment a valid
	// seal of record's covers (seal.go), and with Keys only under one of
	// them.
	Sealed bool
	Keys   []ed25519.PublicKey
	// Grant, when set, reads only the requests made under that sudo grant
	// (NAMESPACE/NAME): its extra (elevation.GrantExtra) on the user the
	// authorizer was asked about, or the proxy's line's grant.
	Grant string
}

// Log is what Read read: the requests, and the lines it skipped.
type Log struct {
	Requests []Request
	// Skipped counts the lines that are no request a server could have
	// authorized (not JSON, not an audit event, a name no API server
	// takes); Skips says why, for the first maxSkips of them.
	Skipped int
	Skips   []string
	// Unsealed counts a recording's lines no valid seal covers (or none
	// by a key given): written by someone else than record, not read.
	Unsealed int
	// SealKeys counts the events read under each key that sealed them.
	SealKeys map[string]int
}

// maxSkips bounds the reasons Log keeps.
const maxSkips = 3

// skip counts line n as skipped, for why.
func (l *Log) skip(n int, why string) {
	l.Skipped++
	l.reason(n, why)
}

func (l *Log) reason(n int, why string) {
	if len(l.Skips) < maxSkips {
		l.Skips = append(l.Skips, fmt.Sprintf("line %d: %s", n, logging.OneLine(why, 200)))
	}
}

// entry is one request's events: the stage read, and its checks.
type entry struct {
	stage auditv1.Stage
	reqs  []Request
}

// reader is one read of a log.
type reader struct {
	o     ReadOptions
	l     Log
	order []*entry
	byID  map[string]*entry
	seg   segment
}

// Read reads the requests o selects from a log of what the cluster was
// asked, one per audit ID.
//
//   - The log is audit.k8s.io/v1 Events, one JSON object a line (as
//     kube-apiserver's --audit-log-path writes them, format json, and record
//     does), or the impersonating proxy's --audit-log.
//   - Of an audit ID's events, the response's stage where the log has it,
//     the stage the response started otherwise.
//   - A line that is no such request is skipped and counted, never fatal:
//     the identity profiled writes the requests, and must not stop its own
//     profile with one bad line. Only a failed read is an error.
func Read(r io.Reader, o ReadOptions) (Log, error) {
	rd := bufio.NewReaderSize(r, 1<<20)
	rr := &reader{o: o, byID: map[string]*entry{}, seg: segment{first: 1}}
	n := 1
	for ; ; n++ {
		line, tooLong, err := readLine(rd)
		if errors.Is(err, io.EOF) && len(line) == 0 && !tooLong {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return rr.l, fmt.Errorf("reading line %d: %w", n, err)
		}
		if tooLong {
			rr.l.skip(n, fmt.Sprintf("longer than %d MiB", maxLine>>20))
			continue
		}
		rr.line(n, bytes.TrimRight(line, "\r\n"))
	}
	rr.endSegment(n, nil) // n: one past the last line
	for _, e := range rr.order {
		rr.l.Requests = append(rr.l.Requests, e.reqs...)
	}
	return rr.l, nil
}

// line reads line n (its end trimmed).
func (rr *reader) line(n int, raw []byte) {
	line := bytes.TrimSpace(raw)
	if len(line) == 0 {
		return
	}
	var kind struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(line, &kind); err != nil {
		rr.hash(raw)
		rr.l.skip(n, "not a JSON audit event (kube-apiserver's --audit-log-format=json)")
		return
	}
	if kind.Kind == sealKind {
		rr.endSegment(n, line)
		return
	}
	rr.hash(raw)
	if kind.Kind == "" {
		// A line of the impersonating proxy's --audit-log.
		reqs, err := proxyLine(line, rr.o)
		if err == nil {
			err = checkAll(reqs)
		}
		if err != nil {
			rr.l.skip(n, err.Error())
			return
		}
		if len(reqs) > 0 {
			rr.add(&entry{stage: auditv1.StageResponseComplete, reqs: reqs})
		}
		return
	}
	var ev auditv1.Event
	if err := json.Unmarshal(line, &ev); err != nil {
		rr.l.skip(n, "not a JSON audit event (kube-apiserver's --audit-log-format=json)")
		return
	}
	if ev.Kind != "Event" || ev.APIVersion != auditv1.SchemeGroupVersion.String() {
		rr.l.skip(n, fmt.Sprintf("a %q of %q, not an audit.k8s.io/v1 Event", ev.Kind, ev.APIVersion))
		return
	}
	if ev.Stage == auditv1.StageRequestReceived {
		return // no answer yet: the later stages of its audit ID have it
	}
	e := &entry{stage: ev.Stage, reqs: selected(ev, rr.o)}
	if err := checkAll(e.reqs); err != nil {
		rr.l.skip(n, err.Error())
		return
	}
	if len(e.reqs) == 0 {
		// Not selected, nor is any other stage of its request (they carry
		// the same identities): nothing kept, so memory grows with what is
		// selected, not with the log (sudo report reads a cluster's).
		return
	}
	// A client may send its own Audit-ID, and kube-apiserver adopts it:
	// only the stages of one request (its user, verb and URI) merge.
	id := strings.Join([]string{string(ev.AuditID), ev.User.Username, ev.Verb, ev.RequestURI}, "\x00")
	if prev, ok := rr.byID[id]; ok && ev.AuditID != "" {
		// One request: the stage of its response replaces the stage it
		// started streaming at (a watch, logs -f, exec).
		if prev.stage == auditv1.StageResponseStarted {
			*prev = *e
		}
		return
	}
	if ev.AuditID != "" {
		rr.byID[id] = e
	}
	rr.add(e)
}

// hash adds a recording's line to its segment's digest.
func (rr *reader) hash(raw []byte) {
	if rr.o.Sealed {
		rr.seg.lines.Write(raw)
		rr.seg.lines.WriteByte('\n')
		rr.seg.n++
	}
}

// add keeps e: at once, or with its segment until its seal is read.
func (rr *reader) add(e *entry) {
	if rr.o.Sealed {
		rr.seg.pending = append(rr.seg.pending, e)
		return
	}
	rr.order = append(rr.order, e)
}

// endSegment ends the segment at line n, a seal (nil: the end of the log,
// one past its last line, no seal): its events are read when the seal
// holds, counted unsealed otherwise.
func (rr *reader) endSegment(n int, seal []byte) {
	defer func() { rr.seg = segment{first: n + 1} }()
	if !rr.o.Sealed || (seal == nil && rr.seg.n == 0) {
		return
	}
	why := "not sealed by record (lines written by someone else, or a recording cut short)"
	if seal != nil {
		key, err := rr.seg.check(seal, rr.o.Keys)
		if err == nil {
			rr.order = append(rr.order, rr.seg.pending...)
			if rr.l.SealKeys == nil {
				rr.l.SealKeys = map[string]int{}
			}
			rr.l.SealKeys[key] += rr.seg.n
			return
		}
		why = err.Error()
	}
	rr.l.Unsealed += rr.seg.n
	rr.l.reason(rr.seg.first, fmt.Sprintf("%d lines to line %d: %s", rr.seg.n, max(n-1, rr.seg.first), why))
}

// ProxyLine is a line of the impersonating proxy's --audit-log: the proxy
// writes it, least-privilege --from-audit reads it.
type ProxyLine struct {
	Time   string `json:"time"`
	Remote string `json:"remote,omitempty"`
	// Method and Path are the caller's request line.
	Method    string `json:"verb"`
	Path      string `json:"path"`
	Code      int    `json:"code"`
	LatencyMs int64  `json:"latencyMs"`
	// Answered: the code is the cluster's answer; false when the proxy
	// refused the request itself, or had no answer (its 502).
	Answered bool `json:"answered"`
	// User, Groups and UID are who the caller was authenticated as
	// (nothing when it was not).
	User   string   `json:"user,omitempty"`
	Groups []string `json:"groups,omitempty"`
	UID    string   `json:"uid,omitempty"`
	// OriginalUser is the caller that impersonated User, if one did.
	OriginalUser string `json:"originalUser,omitempty"`
	// Grant is the sudo grant (NAMESPACE/NAME) the request was made under.
	Grant  string `json:"grant,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Request is what the cluster's authorizer was asked, as User.
	Request *Request `json:"request,omitempty"`
}

// proxyLine is the request of a line of the impersonating proxy's audit log
// (kubectl-impersonate proxy --audit-log) when o selects its user: the
// attributes the cluster's authorizer was asked, as that user, decided by
// the cluster's answer (DecisionOf) when it answered at all (Answered: a
// line without it is a proxy's older than the field, which says nothing of
// the answer). The proxy cannot tell an admission's 403 from the
// authorizer's: every 403 is refused.
func proxyLine(line []byte, o ReadOptions) ([]Request, error) {
	var l ProxyLine
	if err := json.Unmarshal(line, &l); err != nil {
		return nil, errors.New("not a line of the impersonating proxy's --audit-log")
	}
	if l.Request == nil {
		if l.User == "" {
			return nil, nil // refused before it was authenticated: no one's
		}
		return nil, errors.New("a proxy's line without the request's attributes (a proxy older than " +
			"least-privilege): record the use again with a newer proxy")
	}
	if (o.User != "" && l.User != o.User) || (o.Grant != "" && l.Grant != o.Grant) {
		return nil, nil
	}
	r := *l.Request
	r.User, r.Code, r.Decision = l.User, l.Code, Undecided
	if l.Answered || l.Code == http.StatusUnauthorized || l.Code == http.StatusForbidden {
		r.Decision = DecisionOf(l.Code)
	}
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
	switch {
	case r.Resource == "" && (!strings.HasPrefix(r.Path, "/") || r.Subresource != "" || r.APIGroup != "" ||
		r.Namespace != "" || r.Name != ""):
		return fmt.Errorf("a request of neither a resource nor a path (%s)",
			logging.OneLine(strconv.Quote(r.Path), 100))
	case r.Resource != "" && r.Path != "":
		return errors.New("a request of both a resource and a path")
	}
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
		"created": r.Created, "path": r.Path} {
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

// readLine is the next line of rd, without its end; tooLong, with the
// line read to its end and dropped, past maxLine.
func readLine(rd *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := rd.ReadSlice('\n')
		if !tooLong {
			line = append(line, chunk...)
		}
		if len(line) > maxLine {
			tooLong, line = true, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, tooLong, err
		}
	}
}

// selected is what ev holds of the requests o selects.
func selected(ev auditv1.Event, o ReadOptions) []Request {
	if o.Grant != "" {
		u := ev.User
		if ev.ImpersonatedUser != nil {
			u = *ev.ImpersonatedUser
		}
		if !slices.Contains(u.Extra[elevation.GrantExtra], o.Grant) {
			return nil
		}
		return []Request{fromEvent(ev)}
	}
	impersonated := ""
	if ev.ImpersonatedUser != nil {
		impersonated = ev.ImpersonatedUser.Username
	}
	switch {
	case o.User == "" && impersonated == "", impersonated != "" && impersonated == o.User,
		impersonated == "" && ev.User.Username == o.User:
		return []Request{fromEvent(ev)}
	case impersonated != "" && o.User != "" && ev.User.Username == o.User:
		// Sent by User as another identity: the impersonate checks were
		// User's. kube-apiserver logs the impersonated user only once the
		// impersonation passed, and the authorizer's decision only past
		// it: both, or nothing shows it passed.
		decision := Undecided
		if _, decided := ev.Annotations[DecisionAnnotation]; decided {
			decision = Allow
		}
		constraint := ""
		if ev.AuthenticationMetadata != nil {
			constraint = ev.AuthenticationMetadata.ImpersonationConstraint
		}
		main := fromEvent(ev)
		reqs := ImpersonationChecks(withoutServerGroups(*ev.ImpersonatedUser), constraint, main)
		for i := range reqs {
			reqs[i].User, reqs[i].Code, reqs[i].Decision = "", main.Code, decision
		}
		return reqs
	}
	return nil
}

// nameInURI tells whether uri's path names name as an object of resource
// (POST .../secrets/foo: the authorizer was asked "create secrets foo").
func nameInURI(uri, resource, name string) bool {
	u, err := url.Parse(uri)
	return err == nil && name != "" && strings.HasSuffix(u.Path, "/"+resource+"/"+name)
}

// fromEvent is the request ev records, decided by the authorizer's
// annotation (a 401 is refused by authentication, before it).
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
	switch d := Decision(ev.Annotations[DecisionAnnotation]); {
	case r.Code == http.StatusUnauthorized:
		r.Decision = Forbid
	case d == Allow || d == Forbid:
		r.Decision = d
	}
	if ev.ObjectRef == nil || ev.ObjectRef.Resource == "" {
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
	if r.Verb == "create" && r.Subresource == "" && !nameInURI(ev.RequestURI, r.Resource, r.Name) {
		// The audit log names the object created, from the response; the
		// authorizer saw no name (the URL has none).
		r.Name, r.Created = "", r.Name
	}
	return r
}
