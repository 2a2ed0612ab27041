# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-host work over every CPU of the controller, in host order (issue 17).

:func:`map_hosts` runs ``fn(host, context)`` for each host and returns the results in the order of ``hosts``,
whatever the number of workers: a pooled run gives exactly the serial run's result. With more than
:data:`POOL_MIN_HOSTS` hosts and fork available (Linux) the hosts go in chunks of :data:`CHUNK` to a
``ProcessPoolExecutor`` of forked workers; ``context`` is inherited by the fork (never pickled), only the host
names go out and the results come back. Fewer hosts, one CPU, no fork, or a pool that cannot start: the same
function in a plain loop. An exception raised by ``fn`` is raised here, as in the serial loop.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, List, Optional, Sequence

#: Below this many hosts a pool costs more than it saves (fork, pickling) on a 2-core controller.
POOL_MIN_HOSTS = 200
#: Hosts per task sent to a worker.
CHUNK = 100

_JOB: Any = None  # (fn, context) of the running map, inherited by the forked workers


class PoolError(RuntimeError):
    """A worker process died (killed for memory, say): the run stops with this message, never half-done quietly."""


def workers(requested: Optional[int] = None) -> int:
    """How many worker processes: ``requested``, else ``GPUOPS_INSPECT_WORKERS``, else the usable CPUs."""
    if requested is None:
        env = os.environ.get("GPUOPS_INSPECT_WORKERS", "")
        requested = int(env) if env.isdigit() else None
    if requested is None:
        try:
            requested = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            requested = os.cpu_count() or 1
    return max(1, int(requested))


def _run_chunk(chunk: Sequence[str]) -> List[Any]:
    fn, context = _JOB
    return [fn(host, context) for host in chunk]


def map_hosts(
    fn: Callable[[str, Any], Any],
    hosts: Sequence[str],
    context: Any,
    n_workers: Optional[int] = None,
    min_hosts: Optional[int] = None,
) -> List[Any]:
    """``[fn(host, context) for host in hosts]``, on a pool of forked workers when it pays (module doc).

    ``min_hosts``: the fewest hosts worth a pool for this ``fn`` (a parse of ~25 ms a host pays from a few dozen
    hosts; the evaluation, a few ms a host, from :data:`POOL_MIN_HOSTS`). Chunks are at most :data:`CHUNK` hosts and
    small enough that every worker gets one."""
    global _JOB
    hosts = list(hosts)
    n = workers(n_workers)
    least = POOL_MIN_HOSTS if min_hosts is None else min_hosts
    if n < 2 or len(hosts) < max(2, least) or "fork" not in multiprocessing.get_all_start_methods():
        return [fn(host, context) for host in hosts]
    size = max(1, min(CHUNK, -(-len(hosts) // n)))
    chunks = [hosts[i : i + size] for i in range(0, len(hosts), size)]
    _JOB = (fn, context)
    # the parent's heap (an ansible-core worker: the inventory, every host's variables, the facts read) goes to the
    # permanent generation before the fork: a worker's garbage collections then never walk it, and never write to
    # its pages (copy-on-write), which cost the workers ~40 % on a 1,000-node parse (docs/performance.md)
    gc.freeze()
    try:
        with ProcessPoolExecutor(max_workers=min(n, len(chunks)), mp_context=multiprocessing.get_context("fork")) as ex:
            out: List[Any] = []
            for part in ex.map(_run_chunk, chunks):
                out.extend(part)
            return out
    except BrokenProcessPool as exc:
        # never re-run serially: hosts whose state was saved by the dead pool would be judged against themselves
        raise PoolError(
            "a worker process of the inspection died (%s): nothing was reported; run again, or with "
            "GPUOPS_INSPECT_WORKERS=1 to evaluate in one process" % (exc or "killed")
        ) from exc
    finally:
        _JOB = None
        gc.unfreeze()
