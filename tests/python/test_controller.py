"""The Python package over the built library, without torch."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from unittest import mock

import trainctl


def wait_until(cond, limit=5.0):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return cond()



def _closed_to_others(*paths):
    """The first directory on the way to one of paths that other users may not enter (or
    the file they may not read), or "" when they can reach them all."""
    import stat
    for path in paths:
        if not path:
            continue
        p = os.path.abspath(path)
        while True:
            try:
                mode = os.stat(p).st_mode
            except OSError:
                break
            need = stat.S_IXOTH if stat.S_ISDIR(mode) else stat.S_IROTH
            if not mode & need:
                return p
            if p == "/":
                break
            p = os.path.dirname(p)
    return ""

class ControllerTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="trainctl-py-")
        self.kill = os.path.join(self.dir, "KILL")
        self.save = os.path.join(self.dir, "SAVE")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def make(self, **kw):
        kw.setdefault("state_path", os.path.join(self.dir, "state"))
        kw.setdefault("signals", "none")
        kw.setdefault("poll_interval", "100ms")
        return trainctl.Controller(kill_switch=self.kill, save_switch=self.save, **kw)

    def test_the_documented_loop(self):
        with self.make() as ctl:
            saves, exits = [], []
            for step in range(400):
                if step == 5:
                    open(self.save, "w").close()
                if saves and step == saves[0] + 5:
                    open(self.kill, "w").close()
                d = ctl.check(step)
                if d.save:
                    saves.append(step)
                if d.exit:
                    exits.append((step, d.reason))
                    break
                time.sleep(0.01)
            self.assertEqual(len(saves), 1)
            self.assertEqual(exits[0][1], "kill-switch")
            self.assertFalse(os.path.exists(self.save))

    def test_resume_path_is_the_newest_save_every_rank_committed(self):
        ckpt = os.path.join(self.dir, "ckpt")
        self.assertIsNone(trainctl.resume_path(ckpt))  # a fresh start
        with mock.patch.dict(os.environ, {"WORLD_SIZE": "2"}):
            ranks = [self.make(rank=str(r), state_path=os.path.join(self.dir, "state%d" % r)) for r in (0, 1)]
            for step, committing in ((100, ranks), (200, ranks[:1])):  # rank 1's save at 200 raised
                path = os.path.join(ckpt, "step_%08d" % step)
                os.makedirs(path)
                for ctl in committing:
                    ctl.saved(step, path)
            self.assertEqual(trainctl.resume_path(ckpt), os.path.join(ckpt, "step_00000100"))
            with self.assertRaisesRegex(ValueError, "rank 1 but the world has 1"):
                self.make(rank="1", world_size=1, state_path=os.path.join(self.dir, "alone")).saved(
                    200, os.path.join(ckpt, "step_00000200"))
            ranks[1].saved(200, os.path.join(ckpt, "step_00000200"))
            self.assertEqual(trainctl.resume_path(ckpt), os.path.join(ckpt, "step_00000200"))
            os.symlink(os.path.join(ckpt, "step_00000200"), os.path.join(ckpt, "step_00000300"))
            with self.assertRaisesRegex(ValueError, "is a link; accepted: the checkpoint"):
                ranks[0].saved(300, os.path.join(ckpt, "step_00000300"))
            self.assertEqual(trainctl.resume_path(ckpt), os.path.join(ckpt, "step_00000200"))
            for ctl in ranks:
                ctl.close()

    def test_saving_commits_a_save_that_ended_and_not_one_that_raised(self):
        ckpt = os.path.join(self.dir, "ckpt")
        with mock.patch.dict(os.environ, {"WORLD_SIZE": "1"}):
            with self.make() as ctl:
                first = os.path.join(ckpt, "step_00000010")
                with ctl.saving(10, first):
                    os.makedirs(first)
                    self.assertIsNone(trainctl.resume_path(ckpt), "not committed inside the block")
                self.assertEqual(trainctl.resume_path(ckpt), first)
                second = os.path.join(ckpt, "step_00000020")
                with self.assertRaises(OSError):
                    with ctl.saving(20, second):
                        os.makedirs(second)
                        raise OSError(28, "No space left on device")
                self.assertEqual(trainctl.resume_path(ckpt), first, "the save that raised is not resumed from")
                ctl.phase_begin("eval")  # the save's phase was closed, even by the exception
                ctl.phase_end()
                with self.assertRaisesRegex(ValueError, "phase"):
                    ctl.phase_end()

    def test_should_exit_and_should_save(self):
        with self.make() as ctl:
            self.assertFalse(ctl.should_exit())
            self.assertFalse(ctl.should_save())
            open(self.save, "w").close()
            self.assertTrue(wait_until(ctl.should_save))
            self.assertFalse(ctl.should_save(), "one touch, one save")

    def test_phases_nest_and_a_bad_name_or_end_is_a_value_error(self):
        with self.make() as ctl:
            with ctl.phase("eval"):
                with ctl.phase("save"):
                    pass
            ctl.phase_begin("eval")
            ctl.phase_end()
            with self.assertRaises(ValueError) as e:
                ctl.phase_end()
            self.assertIn("without an open phase", str(e.exception))
            with self.assertRaises(ValueError) as e:
                with ctl.phase("my eval"):
                    pass
            self.assertIn("'my eval'", str(e.exception))

    def test_bad_setting_is_a_value_error_naming_it(self):
        with self.assertRaises(ValueError) as e:
            self.make(poll_interval="-5s")
        self.assertIn("poll_interval", str(e.exception))
        with self.assertRaises(TypeError):
            trainctl.Controller(no_such_setting=1)

    def test_signal_reason(self):
        with self.make(signals="USR2") as ctl:
            os.kill(os.getpid(), signal.SIGUSR2)
            self.assertTrue(wait_until(ctl.should_exit))
            self.assertEqual(ctl.check(0).reason, "signal")
        self.assertEqual(signal.getsignal(signal.SIGUSR2), signal.SIG_DFL)

    def test_deadline(self):
        with self.make(deadline=time.time() + 0.2) as ctl:
            self.assertTrue(wait_until(ctl.should_exit))
            self.assertEqual(ctl.check(1).reason, "deadline")

    def test_closed_controller_says_so(self):
        ctl = self.make()
        ctl.close()
        ctl.close()
        with self.assertRaises(ValueError):
            ctl.should_exit()

    def test_malformed_environment_is_one_line_and_a_fallback(self):
        env = dict(os.environ, TRAINCTL_DEADLINE="soon")
        code = "import trainctl; c = trainctl.Controller(signals='none'); print(c.check(0).exit)"
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "False")
        lines = [l for l in out.stderr.splitlines() if "TRAINCTL_DEADLINE" in l]
        self.assertEqual(len(lines), 1, out.stderr)
        self.assertIn("using no deadline", lines[0])

    def test_a_program_that_used_the_library_exits_without_a_word_on_stderr(self):
        # At exit the library's lines go back to stderr (a NULL log function); ctypes
        # refused None there, and every process printed "Exception ignored in atexit".
        code = "import trainctl; c = trainctl.Controller(signals='none'); c.check(0)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stderr, "")

    def test_the_librarys_lines_go_to_the_trainctl_logger_once_logging_is_configured(self):
        # The kill switch's exit (INFO) and a malformed setting (WARNING), with logging set
        # up: through the logger "trainctl", not raw on stderr. Without it: stderr as before.
        code = (
            "import logging, os, sys, trainctl\n"
            "if sys.argv[1] == 'logging':\n"
            "    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format='%(name)s %(levelname)s %(message)s')\n"
            "if sys.argv[1] == 'default':  # WARNING for the root: trainctl's INFO lines still show\n"
            "    logging.basicConfig(stream=sys.stdout)\n"
            "if sys.argv[1] == 'quiet':  # the program's own say: WARNING for trainctl\n"
            "    logging.basicConfig(stream=sys.stdout); logging.getLogger('trainctl').setLevel(logging.WARNING)\n"
            "open(sys.argv[2], 'w').close()\n"
            "c = trainctl.Controller(signals='none', kill_switch=sys.argv[2], state_path=sys.argv[3])\n"
            "print('exit', c.check(0).exit)\n"
            "c.close()\n")
        env = dict(os.environ, TRAINCTL_DEADLINE="soon")
        for mode in ("logging", "default", "quiet", "plain"):
            out = subprocess.run([sys.executable, "-c", code, mode, self.kill, os.path.join(self.dir, "st-" + mode)],
                                 env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            if mode == "logging":
                self.assertIn("trainctl INFO exit at step 0: kill-switch", out.stdout)
                self.assertIn("trainctl WARNING TRAINCTL_DEADLINE", out.stdout)
                self.assertNotIn("trainctl: exit at step", out.stderr)
            elif mode == "default":
                self.assertIn("INFO:trainctl:exit at step 0: kill-switch", out.stdout)
                self.assertIn("WARNING:trainctl:TRAINCTL_DEADLINE", out.stdout)
                self.assertEqual(out.stderr, "")
            elif mode == "quiet":
                self.assertNotIn("exit at step", out.stdout + out.stderr)
                self.assertIn("WARNING:trainctl:TRAINCTL_DEADLINE", out.stdout)
            else:
                self.assertIn("trainctl: exit at step 0: kill-switch", out.stderr)
                self.assertEqual(out.stdout.strip(), "exit True")

    def test_a_supervisor_of_another_layout_is_one_line_naming_both_builds(self):
        # A site's trainctl-run of another node-state layout made the file (no older build
        # is at hand: its file is one of another size, as an older layout's is). The rank
        # says which two builds, watches on its own, and still sees the kill switch.
        d = tempfile.mkdtemp(prefix="trainctl-py-")
        try:
            state = os.path.join(d, "1.0-n1")
            with open(state, "wb") as f:
                f.write(b"TNDCTLS1" + b"\0" * 992)
            open(self.kill, "w").close()
            code = ("import trainctl; c = trainctl.Controller(signals='none'); print('exit', c.check(0).exit)")
            env = dict(os.environ, TRAINCTL_STATE=state, TRAINCTL_SUPERVISOR_BUILD="0.0.9/11", KILL_SWITCH=self.kill)
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(out.stdout.strip(), "exit True")
            said = [l for l in out.stderr.splitlines() if "layout" in l]
            self.assertEqual(len(said), 1, out.stderr)
            self.assertIn("this node's supervisor (trainctl-run) is trainctl 0.0.9 (node-state layout 11) and this "
                          "rank's library trainctl %s (node-state layout " % trainctl.__version__, said[0])
            self.assertIn("install one version for both (the newer is %s" % trainctl.__version__, said[0])
            self.assertIn("the deadline, notices and switches still reach it", said[0])
        finally:
            shutil.rmtree(d)

    def test_an_uncaught_exception_is_noted_for_the_crash_finding_and_still_printed(self):
        # The line noted, through the library's call (wrapped here to see it), and the
        # traceback of the hook that was there before, on stderr as always.
        code = """if True:
            import sys, trainctl
            real = trainctl.Controller.note_error
            def seen(self, text):
                print("NOTED " + text, flush=True)
                real(self, text)
            trainctl.Controller.note_error = seen
            ctl = trainctl.Controller(state_path=sys.argv[1], signals="none")
            ctl.check(0)
            def step():
                raise RuntimeError("CUDA error: an illegal memory access\\nmore")
            step()
        """
        out = subprocess.run([sys.executable, "-c", code, os.path.join(self.dir, "state")], capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertEqual(out.stdout, "NOTED RuntimeError: CUDA error: an illegal memory access (<string>:11 in step)\n",
                         out.stderr)
        self.assertIn("Traceback (most recent call last)", out.stderr)
        self.assertIn("RuntimeError: CUDA error: an illegal memory access", out.stderr)
        # Ctrl-C is no error of the program's, and a closed Controller notes nothing.
        code = """if True:
            import sys, trainctl
            trainctl.Controller.note_error = lambda self, text: print("NOTED " + text, flush=True)
            ctl = trainctl.Controller(state_path=sys.argv[1], signals="none")
            raise KeyboardInterrupt
        """
        out = subprocess.run([sys.executable, "-c", code, os.path.join(self.dir, "state2")], capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.stdout, "", out.stderr)
        self.assertIn("KeyboardInterrupt", out.stderr)

    def test_an_allreduce_callable_makes_every_rank_agree(self):
        # Two "ranks" in two threads, each with its own node state and kill switch; only
        # rank 0's switch is touched. The callable stands in for MPI's MAX allreduce.
        import threading
        world = 2
        barrier = threading.Barrier(world, timeout=10)
        slots = [None] * world

        def make_reduce(rank):
            def reduce(values):
                slots[rank] = list(values)
                barrier.wait()
                out = [max(col) for col in zip(*slots)]
                barrier.wait()
                return out
            return reduce

        results = [None] * world

        def rank_main(rank):
            d = os.path.join(self.dir, "r%d" % rank)
            os.mkdir(d)
            with trainctl.Controller(kill_switch=os.path.join(d, "KILL"), state_path=os.path.join(d, "state"),
                                     signals="none", poll_interval="100ms", check_every=4, rank=rank) as ctl:
                reduce = make_reduce(rank)
                for step in range(2000):
                    if rank == 0 and step == 6:
                        open(os.path.join(d, "KILL"), "w").close()
                    dec = ctl.check(step, allreduce=reduce)
                    if dec.exit:
                        results[rank] = (step, dec.reason)
                        return
                    time.sleep(0.005)

        threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(world)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertIsNotNone(results[0])
        self.assertEqual(results[0], results[1], "both ranks exit at the same step for the same reason")
        self.assertEqual(results[0][1], "kill-switch")
        self.assertEqual(results[0][0] % 4, 0, "decided only where an agreement is due")

    def test_an_allreduce_that_returns_the_wrong_shape_is_one_clear_error(self):
        with self.make(check_every=1) as ctl:
            with self.assertRaises(trainctl.TrainctlError) as e:
                ctl.check(0, allreduce=lambda values: values[:3])
            self.assertIn("allreduce returned 3 values", str(e.exception))

    def test_mpi_allreduce_is_importable_without_mpi4py(self):
        self.assertTrue(callable(trainctl.mpi_allreduce))
        self.assertNotIn("mpi4py", sys.modules)

    def test_version(self):
        self.assertRegex(trainctl.version(), r"^\d+\.\d+\.\d+$")


if __name__ == "__main__":
    unittest.main()


def _open_install_tree(top):
    """An install tree under top/prefix: the package in lib/python3/dist-packages and a
    copy of the library in a lib directory anyone can write. Returns (lib, pkg)."""
    lib = os.path.join(top, "prefix", "lib")
    pkg = os.path.join(lib, "python3", "dist-packages")
    shutil.copytree(os.path.dirname(trainctl.__file__), os.path.join(pkg, "trainctl"))
    shutil.copy(trainctl._native.lib()._name, os.path.join(lib, "libtrainctl.so.0"))
    os.chmod(lib, 0o777)
    return lib, pkg


def _clone_in_sticky_dir(top):
    """A checkout as under /tmp: TOP made sticky and writable by all, this package copied
    to TOP/clone/python, so the install-layout candidate is TOP/libtrainctl.so.0. Returns
    the directory for PYTHONPATH."""
    os.chmod(top, 0o1777)
    pkg = os.path.join(top, "clone", "python")
    shutil.copytree(os.path.dirname(trainctl.__file__), os.path.join(pkg, "trainctl"))
    return pkg


def _load_from(pkg):
    """A Python that loads the library through the package in PKG; its output."""
    code = "import trainctl._native as n; n.lib(); print(n.lib()._name)"
    env = dict(os.environ, PYTHONPATH=pkg, LD_LIBRARY_PATH="")
    env.pop("TRAINCTL_LIBRARY", None)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


class PackageTest(unittest.TestCase):
    def test_the_run_id_is_the_arrays_on_its_cluster_or_the_users_own(self):
        saved = {k: os.environ.get(k) for k in ("TRAINCTL_RUN_ID", "SLURM_CLUSTER_NAME", "SLURM_ARRAY_JOB_ID",
                                                "SLURM_JOB_ID")}
        try:
            for k in saved:
                os.environ.pop(k, None)
            self.assertEqual(trainctl.run_id(), "")
            os.environ.update(SLURM_CLUSTER_NAME="alps", SLURM_ARRAY_JOB_ID="4242", SLURM_JOB_ID="4250")
            self.assertEqual(trainctl.run_id(), "alps-4242")
            os.environ["TRAINCTL_RUN_ID"] = "llama-7b.run-3"
            self.assertEqual(trainctl.run_id(), "llama-7b.run-3")
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def test_package_parses_as_python_3_8(self):
        import ast
        pkg = os.path.dirname(trainctl.__file__)
        for name in os.listdir(pkg):
            if name.endswith(".py"):
                with open(os.path.join(pkg, name)) as f:
                    ast.parse(f.read(), name, feature_version=(3, 8))

    def test_typed_with_a_version(self):
        # PEP 561: type checkers read the hints; __version__ is the loaded library's.
        import typing
        pkg = os.path.dirname(trainctl.__file__)
        self.assertTrue(os.path.isfile(os.path.join(pkg, "py.typed")))
        self.assertEqual(trainctl.__version__, trainctl.version())
        hints = typing.get_type_hints(trainctl.Controller.check)
        self.assertIs(hints["return"], trainctl.Decision)
        self.assertIs(hints["step"], int)
        self.assertIs(typing.get_type_hints(trainctl.Controller.should_exit)["return"], bool)

    def test_a_decision_is_a_named_tuple(self):
        # Compared, printed and unpacked as a value: no attribute can be set on it by mistake.
        d = trainctl.Decision(True, reason="deadline")
        self.assertEqual(d, (True, False, "deadline", "", False))
        self.assertEqual(repr(d), "Decision(exit=True, save=False, reason='deadline', save_reason='', saved=False)")
        exit_, save, reason, _, saved = d
        self.assertEqual((exit_, save, reason, saved), (True, False, "deadline", False))
        with self.assertRaises(AttributeError):
            d.exit = False

    def test_import_does_not_load_torch_or_the_library(self):
        code = "import sys, trainctl, trainctl._native as n; print('torch' in sys.modules, n._lib is None)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.stdout.split(), ["False", "True"], out.stderr)

    @unittest.skipUnless(os.getuid() == 0, "needs root to give the planted file to another user")
    def test_a_library_another_user_put_in_a_sticky_directory_is_not_loaded(self):
        # A checkout under /tmp: PYTHONPATH=/tmp/<clone>/python makes the install-layout
        # candidate /tmp/libtrainctl.so.0, which anyone can create in a sticky /tmp.
        real = trainctl._native.lib()._name
        top = tempfile.mkdtemp(prefix="trainctl-sticky-")
        try:
            pkg = _clone_in_sticky_dir(top)
            planted = os.path.join(top, "libtrainctl.so.0")
            shutil.copy(real, planted)
            os.chmod(planted, 0o644)
            os.chown(planted, 65534, 65534)  # mallory's
            out = _load_from(pkg)
            self.assertNotIn(planted, out.stdout, "another user's library was loaded")
            self.assertIn("belongs to uid 65534, not to you or root", out.stderr + out.stdout)
        finally:
            shutil.rmtree(top)

    @unittest.skipUnless(os.getuid() == 0, "needs root to give the link to another user")
    def test_a_link_another_user_made_is_not_followed(self):
        # Issue 33: the check resolved a link, the load followed it again, and the other
        # user who owned the link swapped it in between (8 of 40 starts ran their code).
        # Such a link is refused, whatever it points to now, and what loads is the file
        # that was checked (its descriptor), never the path again.
        real = os.path.realpath(trainctl._native.lib()._name)
        top = tempfile.mkdtemp(prefix="trainctl-link-")
        try:
            pkg = _clone_in_sticky_dir(top)
            link = os.path.join(top, "libtrainctl.so.0")
            os.symlink(real, link)  # to the user's own, good library: for now
            os.lchown(link, 65534, 65534)  # mallory's link
            out = _load_from(pkg)
            self.assertNotIn(link, out.stdout, "a link another user can swap was followed")
            self.assertIn("%s belongs to uid 65534" % link, out.stderr + out.stdout)
        finally:
            shutil.rmtree(top)

    def test_a_library_planted_beside_the_package_is_not_loaded(self):
        # The package in a tree whose lib directory anyone can write (and a library
        # planted a level higher, where the package used to look too).
        real = trainctl._native.lib()._name
        top = tempfile.mkdtemp(prefix="trainctl-plant-")
        try:
            lib, pkg = _open_install_tree(top)
            shutil.copy(real, os.path.join(top, "prefix", "libtrainctl.so.0"))
            code = "import trainctl._native as n; n.lib(); print(n.lib()._name)"
            env = dict(os.environ, PYTHONPATH=pkg, LD_LIBRARY_PATH="")
            env.pop("TRAINCTL_LIBRARY", None)
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
            self.assertNotIn(top, out.stdout, "a planted library was loaded")
            self.assertIn("is writable by others (mode 0777)", out.stderr + out.stdout)
            os.chmod(lib, 0o755)  # the same tree, private: loaded from beside the package
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(out.stdout.strip(), os.path.join(lib, "libtrainctl.so.0"), out.stderr)
        finally:
            shutil.rmtree(top)

    def test_a_refused_library_is_said_even_when_an_installed_copy_loads(self):
        # As with the .deb installed: the copy beside the package is refused, the system
        # loader's one (here through LD_LIBRARY_PATH) loads, and the refusal is one line.
        real = trainctl._native.lib()._name
        top = tempfile.mkdtemp(prefix="trainctl-installed-")
        try:
            lib, pkg = _open_install_tree(top)
            system = os.path.join(top, "system")
            os.mkdir(system)
            shutil.copy(real, os.path.join(system, "libtrainctl.so.0"))
            code = ("import trainctl._native as n; n.lib()\n"
                    "print([l.split()[-1] for l in open('/proc/self/maps') if 'libtrainctl.so' in l][0])")
            env = dict(os.environ, PYTHONPATH=pkg, LD_LIBRARY_PATH=system)
            env.pop("TRAINCTL_LIBRARY", None)
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(out.stdout.strip(), os.path.join(system, "libtrainctl.so.0"), out.stderr)
            said = [l for l in out.stderr.splitlines() if "not loaded" in l]
            self.assertEqual(len(said), 1, out.stderr)
            self.assertIn("is writable by others (mode 0777)", said[0])
            self.assertIn("loaded libtrainctl.so.0 instead", said[0])
        finally:
            shutil.rmtree(top)

    @unittest.skipUnless(os.geteuid() == 0, "needs root to run a child as another user")
    def test_unsearchable_switch_directory_is_one_line_not_a_crash(self):
        d = tempfile.mkdtemp(prefix="trainctl-py-")
        locked = os.path.join(d, "locked")
        os.mkdir(locked, 0o700)  # root's; the child runs as nobody
        os.chmod(d, 0o755)
        code = ("import trainctl; c = trainctl.Controller(signals='none', state_path='/tmp/trainctl-nobody-%d');"
                "print(c.check(0).exit)" % os.getpid())
        env = dict(os.environ, KILL_SWITCH=os.path.join(locked, "KILL"))

        def as_nobody():
            os.setgid(65534)
            os.setuid(65534)
        # Debian's python3 is executable by every user; a pyenv one under /root is not.
        python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
        # A clone in a directory only root may enter (root's home, a mktemp -d): Python
        # skips a path it cannot read without a word, and nobody's import fails.
        closed = _closed_to_others(os.path.dirname(os.path.dirname(trainctl.__file__)),
                                   os.environ.get("TRAINCTL_LIBRARY", ""))
        if closed:
            shutil.rmtree(d)
            self.skipTest("the package is in a directory other users cannot enter (%s): nobody "
                          "cannot import it; run from a clone others may read to test this" % closed)
        try:
            out = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True,
                                 timeout=60, preexec_fn=as_nobody, cwd="/")
        except PermissionError as e:
            self.skipTest("no Python that nobody may run: %s" % e)
        finally:
            shutil.rmtree(d)
        if "Permission denied" in out.stderr and "trainctl" not in out.stderr:
            self.skipTest("this Python or the build tree is not readable by nobody: " + out.stderr[-200:])
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "False")
        lines = [l for l in out.stderr.splitlines() if "KILL" in l]
        self.assertEqual(len(lines), 1, out.stderr)
        self.assertIn("Permission denied", lines[0])


class StackDumpFileTest(unittest.TestCase):
    """Where a rank's Python stacks go (stacks.<pid> beside the node state): only into a
    directory of this user's alone, never through a link, never blocking on a FIFO."""

    def test_the_stacks_file_goes_only_into_a_private_directory_and_never_blocks(self):
        import stat
        from trainctl import controller
        d = tempfile.mkdtemp(prefix="trainctl-py-")
        try:
            own = os.path.join(d, "own")
            os.mkdir(own, 0o700)
            os.mkfifo(os.path.join(own, "stacks.1"))  # in place of the file: an open of it would wait
            fd = controller._open_own_stacks_file(own, "stacks.1")
            self.assertTrue(stat.S_ISREG(os.fstat(fd).st_mode))
            os.close(fd)
            shared = os.path.join(d, "shared")
            os.mkdir(shared)
            os.chmod(shared, 0o777)  # as a directory another user made again after RemoveIPC
            with self.assertRaises(OSError) as refused:
                controller._open_own_stacks_file(shared, "stacks.2")
            self.assertIn("is not this user's, or others can write in it", str(refused.exception))
            self.assertFalse(os.path.exists(os.path.join(shared, "stacks.2")))
            link = os.path.join(d, "link")
            os.symlink(own, link)
            with self.assertRaises(OSError):
                controller._open_own_stacks_file(link, "stacks.3")
            self.assertFalse(os.path.exists(os.path.join(own, "stacks.3")))
        finally:
            shutil.rmtree(d)
