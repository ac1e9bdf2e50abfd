"""docs/metrics.md against the code: every metric trainctl writes has its row, with its
type, and every row names a metric the code writes."""

import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class MetricsPage(unittest.TestCase):
    def test_every_metric_has_its_row_and_every_row_a_metric(self):
        with open(os.path.join(ROOT, "cli", "report", "report_metrics.cpp")) as f:
            code = f.read()
        written = dict(re.findall(r'\{"(trainctl_[a-z_]+)", t::(counter|gauge),', code))
        self.assertGreaterEqual(len(written), 10, "the metric table was not found in report_metrics.cpp")
        with open(os.path.join(ROOT, "docs", "metrics.md")) as f:
            rows = dict(re.findall(r"^\| `(trainctl_[a-z_]+)` \| (counter|gauge) \|", f.read(), re.M))
        self.assertEqual(rows, written)
        for name, kind in written.items():
            self.assertEqual(name.endswith("_total"), kind == "counter", name)


if __name__ == "__main__":
    unittest.main()
