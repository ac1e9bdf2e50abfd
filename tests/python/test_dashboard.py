"""grafana/trainctl.json against the code: a valid dashboard whose every query reads
metrics trainctl writes, each from one source (the supervisor's live files or the
report), so that the e2e test of that source runs it against a real Prometheus
(tests/e2e/dashboard_queries.py)."""

import json
import os
import re
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import dashboard_queries  # noqa: E402


class Dashboard(unittest.TestCase):
    def test_every_query_reads_one_source_of_metrics_trainctl_writes(self):
        live, report = dashboard_queries.source_metrics("live"), dashboard_queries.source_metrics("report")
        self.assertFalse(live & report, "a metric name of both sources")
        queries = dashboard_queries.dashboard_queries()
        self.assertGreaterEqual(len(queries), 10)
        for title, expr in queries:
            names = set(re.findall(r"\btrainctl_[a-z_]+", expr))
            self.assertTrue(names, title)
            self.assertTrue(names <= live or names <= report, "%s: %s reads %s" % (title, expr, sorted(names)))
        sources = {"live" if set(re.findall(r"\btrainctl_[a-z_]+", e)) <= live else "report" for _, e in queries}
        self.assertEqual(sources, {"live", "report"})

    def test_the_model_grafana_imports(self):
        with open(os.path.join(ROOT, "grafana", "trainctl.json")) as f:
            d = json.load(f)
        self.assertEqual(d["uid"], "trainctl-runs")
        ids = [p["id"] for p in d["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids are unique")
        names = {v["name"] for v in d["templating"]["list"]}
        self.assertEqual(names, {"datasource", "slurm_job"})
        for p in d["panels"]:
            self.assertEqual(p["datasource"]["uid"], "${datasource}", p["title"])
            for t in p["targets"]:
                self.assertIn('slurm_job=~"$slurm_job"', t["expr"], p["title"])


if __name__ == "__main__":
    unittest.main()
