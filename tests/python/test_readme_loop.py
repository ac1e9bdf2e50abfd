"""README.md's loop, as written (its first python block), with a stand-in for the user's
own functions (train_step, save, load): run with the kill switch there, it saves at step 0
and exits 0; run again, it resumes from that save at step 1."""

import os
import re
import subprocess
import sys
import tempfile
import unittest

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md")

# What README leaves to the user: the model and the checkpoint's format.
USERS_PART = '''
import os
def train_step(step):
    print("trained step", step, flush=True)
def save(path, step):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "step"), "w") as f:
        f.write(str(step))
def load(path):
    with open(os.path.join(path, "step")) as f:
        return int(f.read())
'''


def readme_loop():
    with open(README) as f:
        blocks = re.findall(r"^```python\n(.*?)^```$", f.read(), re.M | re.S)
    if not blocks:
        raise AssertionError("README.md has no ```python block")
    return blocks[0]


class ReadmeLoopTest(unittest.TestCase):
    def test_the_readme_loop_saves_exits_and_resumes(self):
        loop = readme_loop()
        self.assertLessEqual(len(loop.strip().splitlines()), 16, "README's loop is no longer about 10 lines")
        with tempfile.TemporaryDirectory(prefix="trainctl-readme-") as d:
            program = os.path.join(d, "train.py")
            with open(program, "w") as f:
                f.write(USERS_PART + loop)
            kill = os.path.join(d, "KILL")
            open(kill, "w").close()
            env = dict(os.environ, KILL_SWITCH=kill, TRAINCTL_STATE=os.path.join(d, "state"))
            for want in (0, 1):
                out = subprocess.run([sys.executable, program], cwd=d, env=env, capture_output=True,
                                     text=True, timeout=60)
                self.assertEqual(out.returncode, 0, out.stderr)
                self.assertEqual(out.stdout.splitlines(), ["trained step %d" % want], out.stdout)
                self.assertIn("exit at step %d: kill-switch" % want, out.stderr)
                self.assertTrue(os.path.exists(os.path.join(d, "ckpt", "step_%08d" % want, "step")))


if __name__ == "__main__":
    unittest.main()
