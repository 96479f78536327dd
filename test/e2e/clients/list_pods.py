"""A tenant's program on the Kubernetes Python client (Debian's
python3-kubernetes), as the end-to-end tests run it: loads the kubeconfig
as programs do (its exec entry runs kubectl-impersonate), then lists the
pods of a namespace; prints one JSON line per call on stdout.

usage: python3 list_pods.py KUBECONFIG NAMESPACE CALLS
"""
import json
import sys

from kubernetes import client, config


def main():
    kubeconfig, namespace, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
    # A failing exec plugin is logged here (logging.error, on stderr); the
    # API calls then go without a token.
    config.load_kube_config(config_file=kubeconfig)
    api = client.CoreV1Api()
    for i in range(calls):
        try:
            pods = api.list_namespaced_pod(namespace)
            print(json.dumps({"call": i, "ok": True, "pods": len(pods.items)}), flush=True)
        except Exception as e:  # the test reads what the program saw
            print(json.dumps({"call": i, "ok": False, "error": str(e)[:400]}), flush=True)


if __name__ == "__main__":
    main()
