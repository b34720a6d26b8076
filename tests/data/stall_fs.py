#!/usr/bin/env python3
"""A FUSE file system whose writes stall: tests/operations/log_stall.rs mounts it under
steerd's access log.

    stall_fs.py BACKING MOUNT GATE

Every file lives in the directory BACKING (the test reads the lines there, never through
the mount). While the file GATE exists, each write(2) on the mount waits: it touches
GATE + ".waiting" and sleeps until GATE is removed, then goes through. Everything else
(lookups, reads, opens) answers at once, each call on a thread of its own, so a stalled
write holds up only its caller: a disk that stopped taking writes, as a hung NFS server
or a dying SD card does. Runs in the foreground; the test unmounts it (fusermount -u).
"""

import errno
import os
import sys
import time

from fuse import FUSE, FuseOSError, Operations


class StallFs(Operations):
    def __init__(self, backing, gate):
        self.backing = backing
        self.gate = gate

    def _path(self, path):
        return os.path.join(self.backing, path.lstrip("/"))

    def getattr(self, path, fh=None):
        try:
            st = os.lstat(self._path(path))
        except OSError as e:
            raise FuseOSError(e.errno)
        keys = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size",
                "st_atime", "st_mtime", "st_ctime")
        return {k: getattr(st, k) for k in keys}

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._path(path))

    def access(self, path, mode):
        if not os.access(self._path(path), mode):
            raise FuseOSError(errno.EACCES)

    def open(self, path, flags):
        # O_APPEND is the kernel's to apply (it sends the offset of the end).
        return os.open(self._path(path), flags & ~(os.O_APPEND | os.O_NONBLOCK))

    def create(self, path, mode, fi=None):
        return os.open(self._path(path), os.O_RDWR | os.O_CREAT, mode)

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def write(self, path, data, offset, fh):
        if os.path.exists(self.gate):
            open(self.gate + ".waiting", "w").close()
            while os.path.exists(self.gate):
                time.sleep(0.01)
        return os.pwrite(fh, data, offset)

    def truncate(self, path, length, fh=None):
        os.truncate(self._path(path), length)

    def rename(self, old, new):
        os.rename(self._path(old), self._path(new))

    def unlink(self, path):
        os.unlink(self._path(path))

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        os.close(fh)
        return 0


def main():
    backing, mount, gate = sys.argv[1:4]
    FUSE(StallFs(backing, gate), mount, foreground=True, nothreads=False)


if __name__ == "__main__":
    main()
