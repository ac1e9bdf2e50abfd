"""docs/metrics.md against the code: every metric trainctl writes has its row, with its
type, and every row names a metric the code writes."""

import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class MetricsPage(unittest.TestCase):
    def test_every_metric_has_its_row_and_every_row_a_metric(self):
        written = {}
        # The report's table, and the supervisor's --metrics-dir families.
        for source, least in ((("history", "report_metrics.cpp"), 10), (("supervisor", "task_metrics.cpp"), 8)):
            with open(os.path.join(ROOT, *source)) as f:
                code = f.read()
            # The report's rows and the supervisor's families name the type; its gauge() calls are gauges.
            found = dict(re.findall(r'"(trainctl_[a-z_]+)",\s*t::(counter|gauge),', code))
            found.update((name, "gauge") for name in re.findall(r'gauge\("(trainctl_[a-z_]+)"', code))
            self.assertGreaterEqual(len(found), least, "the metrics were not found in " + "/".join(source))
            written.update(found)
        with open(os.path.join(ROOT, "docs", "metrics.md")) as f:
            rows = dict(re.findall(r"^\| `(trainctl_[a-z_]+)` \| (counter|gauge) \|", f.read(), re.M))
        self.assertEqual(rows, written)
        for name, kind in written.items():
            self.assertEqual(name.endswith("_total"), kind == "counter", name)


if __name__ == "__main__":
    unittest.main()
