// Package impersonation is kube-apiserver's own impersonation filter, the
// handlers of k8s.io/apiserver's pkg/endpoints/filters/impersonation at the
// version go.mod names (constrained impersonation, KEP-5284, and the
// classic one), copied as they are: importing that package would link its
// parent, pkg/endpoints/filters, and through it the full clientset
// (k8s.io/client-go/kubernetes), which no binary of this project links
// (pkg/fastpath's TestLinkedPackages). The only change is the one function
// taken from that parent, GetAuthorizerAttributes (authorizer_attributes.go,
// the same code). TestCopyOfUpstream keeps every file equal to the module's
// own; after a k8s.io/apiserver update, "go test ./internal/impersonation
// -run TestCopyOfUpstream -update" copies them again.
//
// The proxy (pkg/proxy) runs it so that a caller's kubectl --as through the
// proxy is decided by the SubjectAccessReviews kube-apiserver's own filter
// asks, in its order, with its caches and its Status answers.
package impersonation
