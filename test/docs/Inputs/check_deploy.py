"""Checks deploy/kubernetes/spec-serve.yaml against spec-serve itself: starts
the server with the Deployment's arguments (on 127.0.0.1 and a free port,
with the test's artifact), asks it every path the probes, the Prometheus
annotations and the autoscaler name, and checks that ports and timeouts
agree.

  check_deploy.py SPEC_SERVE ARTIFACT spec-serve.yaml
"""

import http.client
import re
import subprocess
import sys
import time

import yaml


def get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read().decode()
    except OSError:
        return 0, ""
    finally:
        c.close()


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

    args[0] = artifact
    args[args.index("--host") + 1] = "127.0.0.1"
    args[args.index("--port") + 1] = "0"
    server = subprocess.Popen([binary] + args, stdout=subprocess.PIPE, text=True)
    try:
        live = int(re.search(r":(\d+)$", server.stdout.readline().strip()).group(1))
        deadline = time.time() + 120
        while get(live, "/health")[0] != 200 and time.time() < deadline:
            time.sleep(0.05)
        for name in ["startupProbe", "readinessProbe", "livenessProbe"]:
            probe = container[name]["httpGet"]
            assert probe["port"] == port["name"]
            print("%s %s: %d" % (name, probe["path"], get(live, probe["path"])[0]))
        annotations = pod["metadata"]["annotations"]
        status, metrics = get(live, annotations["prometheus.io/path"])
        print("prometheus.io/path %s: %d, port %s" % (
            annotations["prometheus.io/path"], status, annotations["prometheus.io/port"]))
        for metric in docs["HorizontalPodAutoscaler"]["spec"]["metrics"]:
            name = metric["pods"]["metric"]["name"]
            gauge = re.search(r"^# TYPE %s gauge$" % name, metrics, re.M)
            print("autoscaler metric %s: %s" % (name, "a gauge" if gauge else "missing"))
    finally:
        server.terminate()
        server.wait(timeout=60)


if __name__ == "__main__":
    main(*sys.argv[1:])
