#!/usr/bin/env python3
"""Runs the Grafana dashboard's queries (grafana/trainctl.json) against a real Prometheus.

    dashboard_queries.py PROMETHEUS_URL live|report

Every query must run without an error. The queries over the metrics of one source (live:
the supervisor's --metrics-dir files, supervisor/task_metrics.cpp; report: trainctl
report --format=prometheus, history/report_metrics.cpp) must each return data: the
test that calls this has made that source's metrics and Prometheus has scraped them.
tests/python/test_dashboard.py checks that each query reads one source only. The
dashboard's variables are given every value ($slurm_job: .*).
"""

import json
import os
import re
import sys
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES = {"live": ("supervisor", "task_metrics.cpp"), "report": ("history", "report_metrics.cpp")}


def source_metrics(source):
    with open(os.path.join(ROOT, *SOURCES[source])) as f:
        return set(re.findall(r'"(trainctl_[a-z_]+)"', f.read()))


def dashboard_queries():
    with open(os.path.join(ROOT, "grafana", "trainctl.json")) as f:
        d = json.load(f)
    return [(p["title"], t["expr"]) for p in d["panels"] for t in p.get("targets", [])]


def query(url, promql):
    address = url + "/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(address, timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise SystemExit("Prometheus refused %r: %s" % (promql, body))
    return body["data"]["result"]


def main(url, source):
    ours = source_metrics(source)
    checked = 0
    for title, expr in dashboard_queries():
        result = query(url, expr.replace("$slurm_job", ".*"))
        names = set(re.findall(r"\btrainctl_[a-z_]+", expr))
        if names and names <= ours:
            if not result:
                raise SystemExit("panel %r: no data for %s" % (title, expr))
            checked += 1
    if checked == 0:
        raise SystemExit("no panel of the dashboard reads the %s metrics" % source)
    print("dashboard: %d panels over the %s metrics returned data" % (checked, source))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2] not in SOURCES:
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
