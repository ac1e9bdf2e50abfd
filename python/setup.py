"""Builds the trainctl wheel (metadata in pyproject.toml). What pyproject.toml cannot say:
the version comes from trainctl.h, the library must be in the package, the tools go onto
PATH as they are, and the wheel is for a platform (it carries compiled files), not a
pure-Python one: the tag scripts/package worked out from the files' glibc symbols
(TRAINCTL_WHEEL_PLATFORM, e.g. manylinux_2_31_x86_64), else this machine's."""

import os
import re
import shutil
import stat
import sys

from setuptools import setup
from setuptools.dist import Distribution

try:
    from setuptools.command.build_scripts import build_scripts
except ImportError:  # setuptools < 69: distutils' (setuptools' own copy where it has one)
    from distutils.command.build_scripts import build_scripts

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
    """py3-none-<platform>: any Python 3.8+ (ctypes, no extension module), the
    platform scripts/package gave (TRAINCTL_WHEEL_PLATFORM) or this machine's."""

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", os.environ.get("TRAINCTL_WHEEL_PLATFORM") or plat


class copy_tools(build_scripts):
    """The tools are ELF executables, not Python scripts: copied byte for byte (the
    stock command would read them as text to rewrite a #! line they do not have).
    They go in the wheel's scripts data, which pip installs into the environment's
    bin/ (a venv's, ~/.local/bin with --user, a conda env's) with the x bit set.
    Not console-script entry points: those start a Python wrapper that would then
    exec the tool, 30-50 ms and an interpreter more in every task's launch."""

    def run(self):
        self.mkpath(self.build_dir)
        for script in self.scripts:
            target = os.path.join(self.build_dir, os.path.basename(script))
            shutil.copyfile(script, target)
            os.chmod(target, os.stat(target).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


if not os.path.exists(os.path.join(HERE, "trainctl", "libtrainctl.so.0")):
    die("trainctl/libtrainctl.so.0 is missing: build the wheel with `bash scripts/package --wheel`, "
        "which stages the package with the library and the tools")
TOOLS = ["trainctl", "trainctl-run", "trainwatch"]
missing = [t for t in TOOLS if not os.path.exists(os.path.join(HERE, "bin", t))]
if missing:
    die("bin/%s is missing: build the wheel with `bash scripts/package --wheel`" % missing[0])
tools = [os.path.join("bin", t) for t in TOOLS]


def shared_files():
    """share/ as staged (the templates, the cron chain, the man pages, the completion):
    pip puts it under the environment's prefix, as the packages do under /usr, so
    $VIRTUAL_ENV/share/trainctl holds what /usr/share/trainctl holds, and man finds the
    pages beside the bin/ on PATH."""
    found = []
    for folder, _, names in sorted(os.walk(os.path.join(HERE, "share"))):
        rel = os.path.relpath(folder, HERE)
        if names:
            found.append((rel, sorted(os.path.join(rel, n) for n in names)))
    return found


setup(version=version(), distclass=binary_distribution, scripts=tools, data_files=shared_files(),
      cmdclass={"bdist_wheel": platform_wheel, "build_scripts": copy_tools})
