package util

import (
	"flag"
	"io"

	"k8s.io/klog/v2"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// RouteKlog sends the log lines of the Kubernetes libraries (klog) to w, or
// nowhere: k8s.io/apiserver's authenticator logs its discovery and key
// fetches there, which a server wants and a one-shot command does not.
func RouteKlog(w io.Writer, on bool) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	if !on {
		w = io.Discard
	}
	klog.SetOutput(logging.LineWriter{W: w}) // an entry may quote an answer: one escaped line
}
