"""Per-node run locks of the ticket hook: one exclusive fcntl lock file per node, taken in sorted order."""

from __future__ import annotations

import errno
import fcntl
import os
import time
from typing import Any, List, Optional

from gpuops_runbook import safety


class NodeLocks:
    """Exclusive fcntl locks <state_dir>/locks/runbook.<node>.lock for every node, taken in sorted order.

    Distinct from the inspection's per-host state locks (<host>.lock): a playbook run under the hook takes
    those itself. `timeout` 0 = refuse at once when a node is busy.
    """

    def __init__(self, state_dir: str, nodes: List[str], timeout: float, poll: float = 0.2):
        self.dir = os.path.join(state_dir, "locks")
        self.nodes = sorted(set(nodes))
        self.timeout = max(0.0, float(timeout))
        self.poll = poll
        self.fds: List[int] = []
        self.busy: Optional[str] = None

    def path(self, node: str) -> str:
        return os.path.join(self.dir, "runbook.%s.lock" % node)

    def acquire(self) -> bool:
        safety.private_dir(self.dir)
        deadline = time.monotonic() + self.timeout
        for node in self.nodes:
            fd = os.open(self.path(node), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            os.fchmod(fd, 0o600)
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        os.close(fd)
                        self.release()
                        raise
                    if time.monotonic() >= deadline:
                        os.close(fd)
                        self.busy = node
                        self.release()
                        return False
                    time.sleep(self.poll)
            os.ftruncate(fd, 0)
            os.write(fd, ("%d\n" % os.getpid()).encode())
            self.fds.append(fd)
        return True

    def holder(self, node: str) -> Optional[str]:
        try:
            with open(self.path(node), encoding="ascii", errors="replace") as fh:
                return fh.read().strip() or None
        except OSError:
            return None

    def release(self) -> None:
        while self.fds:
            fd = self.fds.pop()
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self) -> NodeLocks:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()
