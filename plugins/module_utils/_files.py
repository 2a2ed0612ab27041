# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files: reading capture files safely and writing the collection's own files privately (split from ``_common``).

- reading: :func:`read_capture_bytes` / :func:`read_text` (no link, FIFO, device or oversized file is trusted:
  :class:`UnsafeFileError`), :func:`list_capture_dir`, :func:`is_capture_file`, :func:`decode`;
- writing: :func:`ensure_private_dir`, :func:`write_private_atomic` (0600, temporary file, fsync, rename),
  :func:`open_private`, :func:`fsync_dir`: reports, state, locks and records are never world-readable.

Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from typing import Any, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import MAX_INPUT_BYTES, ParseError


def decode(data: bytes) -> str:
    """Bytes from a tool or a capture file to text; invalid UTF-8 never raises."""
    return data.decode("utf-8", errors="replace")


#: open() flags of the capture reader: never follow a link, never block on a FIFO, never become a tty.
_READ_FLAGS = os.O_RDONLY
for _flag in ("O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC", "O_NOCTTY"):
    _READ_FLAGS |= getattr(os, _flag, 0)


class UnsafeFileError(ParseError):
    """A capture file refused before a byte of it was trusted: a symlink, a FIFO, a device, a socket, a
    directory where a file belongs, a file over the size cap, or one the reader cannot open.

    A ``ParseError`` (every collector already turns those into a collector error) whose default ``kind``
    is ``unreadable``; ``reason`` is a short machine-readable word (``symlink``, ``fifo``, ``device``,
    ``socket``, ``directory``, ``not_regular``, ``too_large``, ``os_error``).
    """

    kind = "unreadable"

    def __init__(self, message: str, source: str, reason: str, parser: str = "read_text") -> None:
        super().__init__(message, parser, source)
        self.reason = reason


def _file_kind(mode: int) -> Tuple[str, str]:
    if stat.S_ISLNK(mode):
        return "symlink", "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "fifo", "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device", "a device node"
    if stat.S_ISSOCK(mode):
        return "socket", "a socket"
    if stat.S_ISDIR(mode):
        return "directory", "a directory"
    return "not_regular", "not a regular file"


def read_capture_bytes(path: str, max_bytes: int = MAX_INPUT_BYTES, parser: str = "read_text") -> Optional[bytes]:
    """The bytes of one evidence file, read safely; None when it does not exist.

    The one way this collection reads a capture file (docs/capture.md, "Reading"): opened with
    ``O_NOFOLLOW | O_NONBLOCK`` (a link is never followed, a FIFO cannot block), ``fstat`` on the open
    descriptor (regular files only: FIFOs, devices, sockets and directories are refused), and at most
    ``max_bytes + 1`` bytes read, so a file that lies about its size or grows while read cannot exhaust
    memory. Anything refused raises :class:`UnsafeFileError` naming the file and why.
    """
    try:  # refuse a special file before opening it at all (opening some devices has side effects)
        pre = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError:
        pre = None
    if pre is not None and not stat.S_ISREG(pre.st_mode):
        reason, what = _file_kind(pre.st_mode)
        raise UnsafeFileError("refused: %s is %s" % (path, what), path, reason, parser)
    try:  # the fstat below is what counts: the file may have been swapped since the lstat
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        try:
            st = os.lstat(path)
        except OSError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            reason, what = _file_kind(st.st_mode)
            raise UnsafeFileError("refused: %s is %s" % (path, what), path, reason, parser) from None
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW on a link (the lstat above lost a race)
            raise UnsafeFileError("refused: %s is a symbolic link" % path, path, "symlink", parser) from None
        raise UnsafeFileError("cannot read %s: %s" % (path, exc.strerror or exc), path, "os_error", parser) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            reason, what = _file_kind(st.st_mode)
            raise UnsafeFileError("refused: %s is %s" % (path, what), path, reason, parser)
        if st.st_size > max_bytes:
            raise UnsafeFileError(
                "refused: %s is %d bytes, over the %d byte limit" % (path, st.st_size, max_bytes),
                path,
                "too_large",
                parser,
            )
        chunks: List[bytes] = []
        total = 0
        while total <= max_bytes:
            chunk = os.read(fd, min(1024 * 1024, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:  # grew while we read it
            raise UnsafeFileError(
                "refused: %s grew past the %d byte limit while being read" % (path, max_bytes),
                path,
                "too_large",
                parser,
            )
        return b"".join(chunks)
    except OSError as exc:
        raise UnsafeFileError("cannot read %s: %s" % (path, exc.strerror or exc), path, "os_error", parser) from None
    finally:
        os.close(fd)


def read_text(path: str, max_bytes: int = MAX_INPUT_BYTES) -> Optional[str]:
    """A capture file as text (invalid UTF-8 replaced); None when it does not exist.

    Raises :class:`UnsafeFileError` (a ParseError, kind ``unreadable``) for a link, a special file, a
    directory, a file over ``max_bytes`` (checked while reading) or an OS error: see read_capture_bytes.
    """
    data = read_capture_bytes(path, max_bytes)
    return None if data is None else decode(data)


def is_capture_file(path: str) -> bool:
    """True when ``path`` is a regular file itself (``lstat``: a link to a file is not). For decisions such
    as "which capture file is present"; the reading itself still goes through :func:`read_capture_bytes`."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def list_capture_dir(path: str) -> Optional[List[str]]:
    """Names in a capture sub-directory (sorted), or None when it is absent or not a real directory.

    ``path`` itself must not be a link (``O_NOFOLLOW`` on the directory): a walk over a capture never
    leaves it through a link. The entries may still be links or special files; read them with
    :func:`read_capture_bytes`, which refuses those.
    """
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        return sorted(os.listdir(fd))
    except OSError:
        return None
    finally:
        os.close(fd)


# --- private files: everything the collection writes (reports, state, locks, records) -----------------------


def ensure_private_dir(path: str, mode: int = 0o700, tighten: bool = False) -> str:
    """Make ``path`` a directory, creating each missing component with exactly ``mode`` (default 0700)
    whatever the umask. Returns ``path``.

    Directories that already exist are left as they are (the operator chose them, and tightening a shared
    parent such as ``/tmp`` would break the host); the files this collection writes into them are private
    on their own (:func:`write_private_atomic`). ``tighten``: ``path`` is a directory the collection owns
    (``<state_dir>/hosts``, ``<state_dir>/locks``): if it exists, belongs to this user and allows more than
    ``mode``, it is narrowed to ``mode`` (never widened). A path that exists and is not a directory raises
    OSError.
    """
    if mode & 0o022:
        raise ValueError("ensure_private_dir: mode %o is group/world-writable" % mode)
    path = path or "."
    missing: List[str] = []
    cur = os.path.abspath(path)
    while not os.path.isdir(cur):
        if os.path.lexists(cur):
            if os.path.isdir(cur):  # another process created it between the two checks
                break
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", cur)
        missing.append(cur)
        parent = os.path.dirname(cur)
        if parent == cur:
            break
        cur = parent
    for d in reversed(missing):
        try:
            os.mkdir(d, mode)
        except FileExistsError:
            if not os.path.isdir(d):
                raise
            continue
        os.chmod(d, mode)  # the umask may have removed bits; never added any
    if tighten and not missing:
        st = os.stat(path)
        if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & ~mode:
            os.chmod(path, stat.S_IMODE(st.st_mode) & mode)
    return path


def _fsync_dir(directory: str) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def _write_all(fd: int, data: Any) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _write_chunks(fd: int, data: Any) -> None:
    """``data`` (str, bytes, or an iterable of them, e.g. a streamed report) to ``fd``, in writes of up to 1 MiB."""
    if isinstance(data, (str, bytes, bytearray)):
        data = (data,)
    buf = bytearray()
    for chunk in data:
        buf += chunk.encode("utf-8") if isinstance(chunk, str) else chunk
        if len(buf) >= 1 << 20:
            _write_all(fd, buf)
            buf = bytearray()
    if buf:
        _write_all(fd, buf)


def write_private_atomic(path: str, data: Any, mode: int = 0o600, sync_dir: bool = True) -> str:
    """Write ``data`` (str: UTF-8, bytes, or an iterable of str/bytes pieces written as they come: a streamed
    document is never held whole) to ``path`` atomically and privately. Returns ``path``.

    A temporary file is created next to ``path`` with ``O_CREAT | O_EXCL`` (mkstemp: mode 0600, never
    through a link), set to ``mode`` (0600 default, 0640 allowed; world bits refused) with fchmod whatever
    the umask, written, fsynced and renamed over ``path``: a link planted at ``path`` is replaced, never
    written through, and a reader sees the old or the new file, never half of one. Missing parent
    directories are created 0700 (:func:`ensure_private_dir`). ``sync_dir=False`` leaves the directory's fsync to
    the caller (a batch of files in one directory: :func:`fsync_dir` once at the end).
    """
    if mode & 0o007 or mode & 0o020:
        raise ValueError("write_private_atomic: mode %o is world-accessible or group-writable" % mode)
    directory = os.path.dirname(path) or "."
    ensure_private_dir(directory)
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path)[:64], suffix=".tmp", dir=directory)
    try:
        try:
            os.fchmod(fd, mode)
            _write_chunks(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if sync_dir:
        _fsync_dir(directory)
    return path


def fsync_dir(directory: str) -> None:
    """fsync a directory (its entries: renames into it), ignoring what cannot be synced."""
    _fsync_dir(directory)


def open_private(path: str, flags: int = os.O_RDWR | os.O_CREAT, mode: int = 0o600) -> int:
    """Open (create) a file the collection owns, such as a lock file or an append-only log: never through a
    link (``O_NOFOLLOW``), regular files only, created with ``mode`` whatever the umask; a file of ours
    found with group/world bits beyond ``mode`` is tightened. Returns the descriptor (caller closes it).
    Missing parent directories are created 0700."""
    ensure_private_dir(os.path.dirname(path) or ".")
    fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        if st.st_mode & 0o777 & ~mode and st.st_uid == os.geteuid():
            os.fchmod(fd, stat.S_IMODE(st.st_mode) & mode)
    except BaseException:
        os.close(fd)
        raise
    return fd
