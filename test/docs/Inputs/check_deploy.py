"""Checks deploy/kubernetes/spec-serve.yaml against spec-serve itself: starts
the server with the Deployment's arguments (on 127.0.0.1 and a free port,
with the test's artifact), asks it every path the probes, the Prometheus
annotations and the autoscaler name, and checks that ports and timeouts
agree.

  check_deploy.py SPEC_SERVE ARTIFACT spec-serve.yaml
"""

import os
import re
import sys

import yaml

# The spec-serve tests' client: it starts the server and talks to it.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools", "spec-serve", "Inputs"))
from serve_client import Server  # noqa: E402


def main(binary, artifact, manifest):
    docs = {d["kind"]: d for d in yaml.safe_load_all(open(manifest))}
    pod = docs["Deployment"]["spec"]["template"]
    container = pod["spec"]["containers"][0]
    args = list(container["args"])
    option = lambda name: args[args.index(name) + 1]
    port = container["ports"][0]
    print("container port %d named %s; --port %s" % (
        port["containerPort"], port["name"], option("--port")))
    assert str(port["containerPort"]) == option("--port")
    assert docs["Service"]["spec"]["ports"][0]["targetPort"] == port["name"]
    grace = pod["spec"]["terminationGracePeriodSeconds"]
    print("grace %ds > shutdown timeout %ss: %s" % (
        grace, option("--shutdown-timeout"), grace > int(option("--shutdown-timeout"))))

    args[args.index("--host") + 1] = "127.0.0.1"
    args[args.index("--port") + 1] = "0"
    server = Server(binary, artifact, args[1:])  # ready once /health is 200
    try:
        for name in ["startupProbe", "readinessProbe", "livenessProbe"]:
            probe = container[name]["httpGet"]
            assert probe["port"] == port["name"]
            print("%s %s: %d" % (name, probe["path"], server.get(probe["path"])[0]))
        annotations = pod["metadata"]["annotations"]
        status, metrics = server.get(annotations["prometheus.io/path"])
        print("prometheus.io/path %s: %d, port %s" % (
            annotations["prometheus.io/path"], status, annotations["prometheus.io/port"]))
        for metric in docs["HorizontalPodAutoscaler"]["spec"]["metrics"]:
            name = metric["pods"]["metric"]["name"]
            gauge = re.search(r"^# TYPE %s gauge$" % name, metrics, re.M)
            print("autoscaler metric %s: %s" % (name, "a gauge" if gauge else "missing"))
    finally:
        server.process.kill()
        server.process.wait()


if __name__ == "__main__":
    main(*sys.argv[1:])
