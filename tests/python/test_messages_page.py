"""scripts/messages, the check of docs/messages.md against the code: it passes on the
repository as it is, and fails on a message added without an entry and on an entry no
code prints."""

import importlib.machinery
import importlib.util
import os
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_checker():
    path = os.path.join(ROOT, "scripts", "messages")
    loader = importlib.machinery.SourceFileLoader("messages_check", path)
    spec = importlib.util.spec_from_loader("messages_check", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


class MessagesPage(unittest.TestCase):
    def setUp(self):
        self.check = load_checker()

    def test_the_page_explains_every_message_the_code_prints(self):
        self.assertEqual(self.check.main(), 0)

    def test_a_new_message_without_an_entry_fails_and_an_entry_without_code_fails(self):
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "supervisor"))
            os.makedirs(os.path.join(root, "docs"))
            with open(os.path.join(root, "supervisor", "a.cpp"), "w") as f:
                f.write('log_.line("the ranks were told %s, %d times", why.c_str(), n);\n'
                        'log_("hang: " + why + "; a new sentence here");\n'
                        'log_line(kLogWarning, "trainctl: the save at step %" PRId64 " is fine\\n", step);\n'
                        'log_("straggler: " + line);  // a line made elsewhere: not a message\n')
            page = os.path.join(root, "docs", "messages.md")
            with open(page, "w") as f:
                f.write("| `the ranks were told …, … times` | x | y |\n"
                        "| `the save at step … is fine` | x | y |\n"
                        "| `a line nothing prints any more` | x | y |\n")
            self.check.ROOT, self.check.PAGE, self.check.SHIPPED = root, page, ["supervisor"]
            code = self.check.code_messages()
            self.assertEqual(sorted(code), ["hang: …; a new sentence here", "the ranks were told …, … times",
                                            "the save at step … is fine"])
            self.assertEqual(self.check.main(), 1)
            with open(page, "a") as f:
                f.write("| `hang: …; a new sentence here` | x | y |\n")
            self.assertEqual(self.check.main(), 1, "the entry no code prints still fails")
            with open(page, "w") as f:
                f.write("| `the ranks were told …, … times`, `the save at step … is fine` | x | y |\n"
                        "| `hang: …; a new sentence here` | x | y |\n")
            self.assertEqual(self.check.main(), 0)


if __name__ == "__main__":
    unittest.main()
