"""A FUSE filesystem whose statfs never answers: a dead network mount in miniature.
Run with /usr/bin/python3 (Debian's python3-fusepy): hung_fs.py MOUNTPOINT."""

import sys
import threading

from fusepy import FUSE, Operations


class Hung(Operations):
    def getattr(self, path, fh=None):
        if path == "/":
            return {"st_mode": 0o40755, "st_nlink": 2}
        raise OSError(2, "no such file")

    def readdir(self, path, fh):
        return [".", ".."]

    def statfs(self, path):
        threading.Event().wait()  # never returns


if __name__ == "__main__":
    FUSE(Hung(), sys.argv[1], foreground=True, nothreads=False, allow_other=False)
