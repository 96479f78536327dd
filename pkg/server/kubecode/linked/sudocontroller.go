package linked

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/host/logging"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/kubecode"
	"github.com/kubectl-impersonate/kubectl-impersonate/pkg/server/sudo"
)

// LeaseName is the Lease the sudo controller's replicas elect a leader
// with.
const LeaseName = "kubectl-impersonate-sudo-controller"

// RunSudoController watches grants and, while it leads, materialises
// them (pkg/server/sudo's Controller) until ctx ends.
func (Code) RunSudoController(ctx context.Context, o kubecode.SudoControllerConfig) error {
	var cfg *rest.Config
	var err error
	if o.InCluster {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	}
	if err != nil {
		return fmt.Errorf("loading the controller's credential: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("making the controller's client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("making the client that watches sudo grants: %w", err)
	}
	log := func(s string) { logging.Notice(o.Log, s) }
	store := sudo.NewStore()
	go store.Watch(ctx, dyn, log)
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	id := host + "_" + hex.EncodeToString(b)
	logging.Noticef(o.Log, "sudo-controller %s: electing a leader on lease %s/%s", id, o.LeaseNamespace, LeaseName)
	(&sudo.Controller{Store: store, Client: client, Interval: o.Interval, Log: log}).Lead(ctx, o.LeaseNamespace,
		LeaseName, id)
	return nil
}
