// Package hostileapi is an API server written by an attacker, for the
// attack tables of docs/security.md: a TLS server on 127.0.0.1 that
// answers as kube-apiserver does (aggregated discovery, SelfSubjectReview,
// the RBAC lists, rules and access reviews, namespaces and configmaps),
// with text of its choosing in every name and message and answers of its
// chosen size: an endless list, a body that never ends, discovery names
// that climb out of a cache directory. The shapes are kube-apiserver's
// (k8s.io/api v0.37); nothing here is a Kubernetes oracle.
package hostileapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Evil is hostile text: terminal escapes (OSC window title, clear
// screen, C1 CSI), bidirectional override and isolate, DEL, a tab that
// would shift a table's columns and a newline that would start a line of
// the attacker's. A command that prints it must escape all of it.
const Evil = "evil\x1b]0;pwned\x07\x1b[2J\u009b31m\u202egnp\u2066\x7f\tTAB\n" + FakeLine

// FakeLine is what follows Evil's newline: found at the start of a line of
// output, the newline went through.
const FakeLine = "FAKE-LINE"

// Server is the attacker's API server.
type Server struct {
	*httptest.Server

	mu sync.Mutex
	// Text goes into every name and message the server answers with
	// (default Evil).
	text string
	// groups replaces /apis' aggregated discovery items (nil: a plain
	// server's rbac.authorization.k8s.io/v1).
	groups []apidiscoveryv2.APIGroupDiscovery
	// endless makes every list's continue token lead to another page.
	endless bool
	// pageItems is the number of items a page (default 2); padding, the
	// bytes of an annotation each list item carries (of a label's value
	// with padLabel).
	pageItems, padding int
	padLabel           bool
	// flood is a path (suffix) answered with a JSON body that never ends.
	flood string
	// plainError answers every review with a 403 whose body is not JSON,
	// raw bytes included.
	plainError bool
	// denyReviews answers every access review with a denial whose reason
	// holds the text (who-can --verify prints the denied subjects).
	denyReviews bool
	// raw answers a path (suffix) with a body of the attacker's.
	raw      map[string]string
	requests atomic.Int64
	pages    atomic.Int64
	paths    []string
}

// New starts a server; Close stops it (also at the test's end, by the
// caller's Cleanup).
func New() *Server {
	s := &Server{text: Evil}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	return s
}

// SetText sets the text put into names and messages.
func (s *Server) SetText(t string) { s.mu.Lock(); s.text = t; s.mu.Unlock() }

// SetGroups replaces the aggregated discovery of /apis.
func (s *Server) SetGroups(g []apidiscoveryv2.APIGroupDiscovery) {
	s.mu.Lock()
	s.groups = g
	s.mu.Unlock()
}

// SetEndless makes every list endless: each page names another.
func (s *Server) SetEndless(v bool) { s.mu.Lock(); s.endless = v; s.mu.Unlock() }

// SetPageItems sets the number of items a list page holds (2 unless set)
// and the bytes of an annotation each carries (a large object's, as
// kubectl's last-applied-configuration).
func (s *Server) SetPageItems(n, padding int) {
	s.mu.Lock()
	s.pageItems, s.padding, s.padLabel = n, padding, false
	s.mu.Unlock()
}

// SetLabelPadding makes each list item carry a label whose value is
// padding bytes long (kube-apiserver refuses a value over 63).
func (s *Server) SetLabelPadding(padding int) {
	s.mu.Lock()
	s.padding, s.padLabel = padding, true
	s.mu.Unlock()
}

// SetFlood answers requests whose path ends in suffix with a JSON body
// that never ends ("" turns it off).
func (s *Server) SetFlood(suffix string) { s.mu.Lock(); s.flood = suffix; s.mu.Unlock() }

// SetRaw answers requests whose path ends in suffix with body, as JSON
// ("" removes it).
func (s *Server) SetRaw(suffix, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.raw == nil {
		s.raw = map[string]string{}
	}
	if body == "" {
		delete(s.raw, suffix)
		return
	}
	s.raw[suffix] = body
}

// SetPlainErrors makes the reviews fail with a non-JSON 403 body.
func (s *Server) SetPlainErrors(v bool) { s.mu.Lock(); s.plainError = v; s.mu.Unlock() }

// SetDenyReviews makes every access review a denial (the reason holds the
// text).
func (s *Server) SetDenyReviews(v bool) { s.mu.Lock(); s.denyReviews = v; s.mu.Unlock() }

// Requests is the number of requests answered so far.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Pages is the number of list pages served so far.
func (s *Server) Pages() int64 { return s.pages.Load() }

// Paths are the request paths seen, in order.
func (s *Server) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}

const aggregatedCT = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.mu.Lock()
	s.paths = append(s.paths, r.URL.Path)
	text, groups, endless, flood, plainError, pageItems, padding, padLabel := s.text, s.groups, s.endless, s.flood, s.plainError, max(s.pageItems, 2), s.padding, s.padLabel
	deny := s.denyReviews
	raws := make(map[string]string, len(s.raw))
	for k, v := range s.raw {
		raws[k] = v
	}
	s.mu.Unlock()
	p := r.URL.Path
	for suffix, body := range raws {
		if strings.HasSuffix(p, suffix) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, body)
			return
		}
	}
	if flood != "" && strings.HasSuffix(p, flood) {
		s.writeFlood(w, r)
		return
	}
	write := func(v any) { writeJSON(w, "application/json", v) }
	switch {
	case p == "/api":
		writeJSON(w, aggregatedCT, discoveryList(coreGroup()))
	case p == "/apis":
		if groups == nil {
			groups = DefaultGroups()
		}
		writeJSON(w, aggregatedCT, discoveryList(groups...))
	case p == "/version":
		write(map[string]string{"major": "1", "minor": "37", "gitVersion": "v1.37.2-" + text})
	case strings.HasSuffix(p, "reviews") && plainError:
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, "denied \xff\xfe by policy: "+text)
	case strings.HasSuffix(p, "/selfsubjectreviews"):
		write(map[string]any{"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1", "status": map[string]any{"userInfo": map[string]any{
			"username": "alice-" + text, "uid": "uid-" + text, "groups": []string{"dev-" + text, "system:authenticated"}, "extra": map[string][]string{"scope-" + text: {"v-" + text}}}}})
	case strings.HasSuffix(p, "/selfsubjectrulesreviews"):
		write(map[string]any{"kind": "SelfSubjectRulesReview", "apiVersion": "authorization.k8s.io/v1", "status": map[string]any{
			"resourceRules":    []map[string]any{{"verbs": []string{"get", "list"}, "apiGroups": []string{""}, "resources": []string{"configmaps"}, "resourceNames": []string{"cm-" + text}}},
			"nonResourceRules": []any{}, "incomplete": true, "evaluationError": "webhook said: " + text}})
	case strings.HasSuffix(p, "accessreviews") && deny:
		write(map[string]any{"kind": "SubjectAccessReview", "apiVersion": "authorization.k8s.io/v1", "status": map[string]any{"allowed": false, "denied": true, "reason": "denied by " + text}})
	case strings.HasSuffix(p, "accessreviews"):
		write(map[string]any{"kind": "SubjectAccessReview", "apiVersion": "authorization.k8s.io/v1", "status": map[string]any{"allowed": true, "reason": "allowed by " + text}})
	case strings.HasSuffix(p, "/clusterroles"), strings.HasSuffix(p, "/roles"):
		s.writeList(w, r, endless, pageItems, func(i int) map[string]any {
			return map[string]any{"metadata": meta("role-"+text, namespaceOf(p)), "rules": []map[string]any{
				{"verbs": []string{"get", "list"}, "apiGroups": []string{""}, "resources": []string{"configmaps", "pods"}, "resourceNames": []string{}}}}
		})
	case strings.HasSuffix(p, "/clusterrolebindings"), strings.HasSuffix(p, "/rolebindings"):
		kind := "ClusterRole"
		s.writeList(w, r, endless, pageItems, func(i int) map[string]any {
			return map[string]any{"metadata": meta("binding-"+text, namespaceOf(p)),
				"roleRef":  map[string]string{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": "role-" + text},
				"subjects": []map[string]string{{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice-" + text}, {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "dev-" + text}}}
		})
	case p == "/api/v1/namespaces":
		s.writeList(w, r, endless, pageItems, func(i int) map[string]any {
			if i == 0 {
				return map[string]any{"metadata": meta("default", "")}
			}
			return map[string]any{"metadata": meta(fmt.Sprintf("ns%d-%s", i, text), "")}
		})
	case strings.HasSuffix(p, "/configmaps"), strings.HasSuffix(p, "/pods"):
		pad := strings.Repeat("p", padding)
		s.writeList(w, r, endless, pageItems, func(i int) map[string]any {
			m := meta(fmt.Sprintf("cm%d-%s", i, text), "default")
			switch {
			case padding > 0 && padLabel:
				m["labels"] = map[string]string{"pad": pad}
			case padding > 0:
				m["annotations"] = map[string]string{"pad": pad}
			}
			return map[string]any{"metadata": m}
		})
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		write(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": "no " + text})
	}
}

func namespaceOf(path string) string {
	if _, rest, ok := strings.Cut(path, "/namespaces/"); ok {
		ns, _, _ := strings.Cut(rest, "/")
		return ns
	}
	return ""
}

func meta(name, namespace string) map[string]any {
	m := map[string]any{"name": name, "uid": "u-" + name, "resourceVersion": "1", "creationTimestamp": "2026-11-27T00:00:00Z"}
	if namespace != "" {
		m["namespace"] = namespace
	}
	return m
}

// writeList answers a list: n items a page; with endless, every page
// names a next one.
func (s *Server) writeList(w http.ResponseWriter, r *http.Request, endless bool, n int, item func(int) map[string]any) {
	s.pages.Add(1)
	page, _ := strconv.Atoi(r.URL.Query().Get("continue"))
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = item(n*page + i)
	}
	md := map[string]any{"resourceVersion": "1"}
	if endless {
		md["continue"] = strconv.Itoa(page + 1)
	}
	writeJSON(w, "application/json", map[string]any{"kind": "List", "apiVersion": "v1", "metadata": md, "items": items})
}

// writeFlood writes the start of a list and then items until the client
// goes away: a body without end.
func (s *Server) writeFlood(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"kind":"List","apiVersion":"v1","metadata":{},"items":[`)
	item := []byte(`{"metadata":{"name":"` + strings.Repeat("x", 200) + `","namespace":"default"}},`)
	chunk := []byte(strings.Repeat(string(item), 256))
	for r.Context().Err() == nil {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

func writeJSON(w http.ResponseWriter, contentType string, v any) {
	w.Header().Set("Content-Type", contentType)
	_ = json.NewEncoder(w).Encode(v)
}

func discoveryList(items ...apidiscoveryv2.APIGroupDiscovery) apidiscoveryv2.APIGroupDiscoveryList {
	return apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}, Items: items}
}

// Resource is a namespaced resource of discovery with kind's answers.
func Resource(name, kind string, namespaced bool, gv metav1.GroupVersionKind) apidiscoveryv2.APIResourceDiscovery {
	scope := apidiscoveryv2.ScopeCluster
	if namespaced {
		scope = apidiscoveryv2.ScopeNamespace
	}
	gv.Kind = kind
	return apidiscoveryv2.APIResourceDiscovery{Resource: name, SingularResource: strings.TrimSuffix(name, "s"), Scope: scope, ResponseKind: &gv,
		Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}
}

// Group is one aggregated discovery group of one current version.
func Group(name, version string, resources ...apidiscoveryv2.APIResourceDiscovery) apidiscoveryv2.APIGroupDiscovery {
	return apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: name},
		Versions: []apidiscoveryv2.APIVersionDiscovery{{Version: version, Resources: resources, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}}}
}

func coreGroup() apidiscoveryv2.APIGroupDiscovery {
	v1 := metav1.GroupVersionKind{Version: "v1"}
	return Group("", "v1", Resource("configmaps", "ConfigMap", true, v1), Resource("pods", "Pod", true, v1), Resource("namespaces", "Namespace", false, v1))
}

// DefaultGroups is a plain server's /apis: the RBAC group.
func DefaultGroups() []apidiscoveryv2.APIGroupDiscovery {
	gv := metav1.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1"}
	return []apidiscoveryv2.APIGroupDiscovery{Group("rbac.authorization.k8s.io", "v1",
		Resource("roles", "Role", true, gv), Resource("rolebindings", "RoleBinding", true, gv),
		Resource("clusterroles", "ClusterRole", false, gv), Resource("clusterrolebindings", "ClusterRoleBinding", false, gv))}
}
