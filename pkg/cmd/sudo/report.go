package sudo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/auditlog"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/elevation"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/cluster/risk"
	cmdutil "github.com/kubectl-impersonate/kubectl-impersonate/pkg/cmd/util"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
)

// ReportOptions is sudo report.
type ReportOptions struct {
	AuditLog  string
	Namespace string
	Output    *cmdutil.OutputFlags
	grant     string
	genericiooptions.IOStreams
}

// Report is what sudo report prints with -o json|yaml.
type Report struct {
	Grant string `json:"grant"`
	// Requests are every request made under the grant, as the log has
	// them.
	Requests []auditlog.Request `json:"requests"`
	// MayOutlive are the allowed requests whose effect may last past the
	// grant's end, with the project's risk of each (pkg/cluster/risk's
	// Lasting).
	MayOutlive []Outliving `json:"mayOutlive"`
	// Skipped counts the log's lines that were no request.
	Skipped int `json:"skipped,omitempty"`
}

// Outliving is an allowed request that may outlive its grant.
type Outliving struct {
	Request auditlog.Request `json:"request"`
	Risk    risk.Risk        `json:"risk"`
}

func newCmdReport(g *cmdutil.GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ReportOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "report GRANT -n NAMESPACE --from-audit FILE",
		Short: "Every request made under a grant, and what it left that may outlive it",
		Long: `report reads an audit log (kube-apiserver's --audit-log-path in JSON, or the
impersonating proxy's --audit-log; - for stdin) and lists every request made
under the grant: those whose user carries the extra
kubectl-impersonate.io/sudo-grant=NAMESPACE/NAME, which the proxy sets on
every elevated request. Then what may outlive the grant: each allowed create,
update or patch the project's risk list marks (service-account tokens and
Secrets, bindings and roles, workloads that run as service accounts such as
CronJobs and Pods, admission webhooks), as access and who-can mark them.`,
		Example: `  kubectl impersonate sudo report sudo-7x2kq -n payments --from-audit /var/log/kubernetes/audit.log
  kubectl impersonate sudo report sudo-7x2kq -n payments --from-audit proxy-audit.log -o json`,
		Args: cobra.ExactArgs(1),
		RunE: g.RunE(o),
	}
	cmd.Flags().StringVar(&o.AuditLog, "from-audit", "", "The audit log to read: kube-apiserver's (JSON) or the "+
		"impersonating proxy's; - for stdin")
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", "", "The grant's namespace")
	o.Output = cmdutil.NewOutputFlags(cmd.Flags(), "a table")
	return cmd
}

// ValidateFlags checks -o before anything is read.
func (o *ReportOptions) ValidateFlags() error { return o.Output.Validate() }

// Complete takes the grant.
func (o *ReportOptions) Complete(_ context.Context, args []string) error {
	o.grant = args[0]
	return nil
}

// Validate checks the flags.
func (o *ReportOptions) Validate() error {
	switch {
	case o.AuditLog == "":
		return errors.New("--from-audit is required: kube-apiserver's audit log (--audit-log-path) or the proxy's")
	case o.Namespace == "":
		return errors.New("-n is required: the grant's namespace")
	case strings.Contains(o.grant, "/"):
		return fmt.Errorf("the grant %q is a name: give its namespace with -n", o.grant)
	}
	return nil
}

// Run reads the log and prints the report.
func (o *ReportOptions) Run(context.Context) error {
	var in io.Reader = o.In
	if o.AuditLog != "-" {
		f, err := os.Open(o.AuditLog)
		if err != nil {
			return fmt.Errorf("opening the audit log: %w", err)
		}
		defer f.Close()
		in = f
	}
	grant := elevation.Ref(o.Namespace, o.grant)
	l, err := auditlog.Read(in, auditlog.ReadOptions{Grant: grant})
	if err != nil {
		return fmt.Errorf("reading the audit log %s: %w", o.AuditLog, err)
	}
	rep := Report{Grant: grant, Requests: l.Requests, MayOutlive: []Outliving{}, Skipped: l.Skipped}
	if rep.Requests == nil {
		rep.Requests = []auditlog.Request{}
	}
	for _, r := range l.Requests {
		if r.Decision != auditlog.Allow || r.Code >= 300 {
			continue
		}
		res := r.Resource
		if r.Subresource != "" {
			res += "/" + r.Subresource
		}
		if k := risk.Lasting(r.Verb, r.APIGroup, res); k.Risky() {
			rep.MayOutlive = append(rep.MayOutlive, Outliving{Request: r, Risk: k})
		}
	}
	return o.Output.Print(o.Out, rep, func(w io.Writer) {
		if len(rep.Requests) == 0 {
			fmt.Fprintf(o.ErrOut, "No requests under grant %s in %s.\n", logging.Printable(grant),
				logging.Printable(o.AuditLog))
			return
		}
		var rows [][]string
		for _, r := range rep.Requests {
			rows = append(rows, []string{r.Verb, what(r), r.Namespace, cmp.Or(r.Name, r.Created), fmt.Sprint(r.Code),
				string(r.Decision)})
		}
		fmt.Fprintf(w, "%d requests under grant %s:\n", len(rep.Requests), logging.Printable(grant))
		table(w, "VERB\tRESOURCE\tNAMESPACE\tNAME\tCODE\tDECISION", rows)
		if len(rep.MayOutlive) == 0 {
			fmt.Fprintln(w, "\nNothing made under it is marked as outliving it.")
			return
		}
		fmt.Fprintf(w, "\n%d may outlive the grant:\n", len(rep.MayOutlive))
		for _, m := range rep.MayOutlive {
			fmt.Fprintf(w, "  %s %s %s/%s: %s\n", m.Request.Verb, what(m.Request),
				logging.Printable(m.Request.Namespace), logging.Printable(cmp.Or(m.Request.Name, m.Request.Created)),
				m.Risk)
		}
	})
}

// what is a request's resource as kubectl names it, or its path.
func what(r auditlog.Request) string {
	if r.Resource == "" {
		return logging.Printable(r.Path)
	}
	s := r.Resource
	if r.APIGroup != "" {
		s += "." + r.APIGroup
	}
	if r.Subresource != "" {
		s += "/" + r.Subresource
	}
	return logging.Printable(s)
}
