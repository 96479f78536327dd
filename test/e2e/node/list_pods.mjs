// A tenant's program on the Kubernetes JavaScript client
// (@kubernetes/client-node), as the end-to-end tests run it: loads the
// kubeconfig (its exec entry runs kubectl-impersonate), then lists the pods
// of a namespace; prints one JSON line per call on stdout.
//
// usage: node list_pods.mjs KUBECONFIG NAMESPACE CALLS
import * as k8s from '@kubernetes/client-node';

const [kubeconfig, namespace, calls] = process.argv.slice(2);
const kc = new k8s.KubeConfig();
kc.loadFromFile(kubeconfig);
const api = kc.makeApiClient(k8s.CoreV1Api);
for (let i = 0; i < Number(calls); i++) {
  try {
    const pods = await api.listNamespacedPod({ namespace });
    console.log(JSON.stringify({ call: i, ok: true, pods: pods.items.length }));
  } catch (e) {
    // A failing exec plugin rejects with the plugin's stderr.
    console.log(JSON.stringify({ call: i, ok: false, error: String(e?.message ?? e).slice(0, 400) }));
  }
}
