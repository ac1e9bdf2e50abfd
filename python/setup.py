"""Builds the trainctl wheel (metadata in pyproject.toml). What pyproject.toml cannot say:
the version comes from trainctl.h, the library must be in the package, and the wheel is
for this platform (it carries a compiled library), not a pure-Python one."""

import os
import re
import sys

from setuptools import setup
from setuptools.dist import Distribution

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # setuptools >= 70 carries it
    from setuptools.command.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))


def die(message):
    sys.stderr.write("setup.py: %s\n" % message)
    sys.exit(1)


def version():
    """trainctl.h's TRAINCTL_VERSION_{MAJOR,MINOR,PATCH}: staged beside this file by
    scripts/package, or in the checkout this file sits in."""
    for path in (os.path.join(HERE, "trainctl.h"),
                 os.path.join(HERE, "..", "libtrainctl", "include", "trainctl", "trainctl.h")):
        if os.path.exists(path):
            with open(path) as f:
                text = f.read()
            parts = [re.search(r"^#define TRAINCTL_VERSION_%s (\d+)$" % p, text, re.M) for p in ("MAJOR", "MINOR", "PATCH")]
            if not all(parts):
                die("%s: no TRAINCTL_VERSION_MAJOR/MINOR/PATCH lines" % path)
            return ".".join(m.group(1) for m in parts)
    die("trainctl.h not found beside setup.py or in ../libtrainctl/include/trainctl")


class binary_distribution(Distribution):
    """Not pure Python: the library goes with the platform's files (platlib)."""

    def has_ext_modules(self):
        return True


class platform_wheel(bdist_wheel):
    """py3-none-<platform>: any Python 3.8+ (ctypes, no extension module), this
    machine's kind of library."""

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


if not os.path.exists(os.path.join(HERE, "trainctl", "libtrainctl.so.0")):
    die("trainctl/libtrainctl.so.0 is missing: build the wheel with `bash scripts/package --wheel`, "
        "which stages the package with the library")
setup(version=version(), distclass=binary_distribution, cmdclass={"bdist_wheel": platform_wheel})
