# -*- coding: utf-8 -*-
"""Generated variants of the scheduler outputs for the fuzz campaign (issue 37): the same rows printed the ways
the Slurm tools print them - other column orders, other widths (sacct cuts a longer value and ends it with ``+``,
sinfo cuts silently), delimited or aligned, with or without the header and the date line (cluster-formats.md 1.1,
1.2 and 2). Seeded: the same variants on every run. The rows are those of cluster-formats.md's captures.
"""

from __future__ import annotations

import random
from typing import List, Sequence, Tuple

#: sinfo -N rows (cluster-formats.md 1.2/1.3 vocabulary): node, partition, state, reason
SINFO_ROWS = [
    ("b22-21", "epyc-64", "drng", "Kill task failed"),
    ("b22-01", "epyc-64", "alloc", "none"),
    ("d17-40", "main*", "drain*", "Not responding"),
    ("c020", "gpu", "idle~", "none"),
    ("c021", "gpu", "fail*", "gres/gpu count repor"),
    ("c022", "gpu", "mix-", "none"),
    ("c023", "gpu", "drng@", "reboot requested"),
    ("b028", "xeon8*", "down", "Node unexpectedly re"),
]
SINFO_COLS = (("NODELIST", 0), ("PARTITION", 1), ("STATE", 2), ("REASON", 3))
#: sacct rows (cluster-formats.md 2): JobID, State, ExitCode, NodeList, Partition
SACCT_ROWS = [
    ("35021740", "OUT_OF_MEMORY", "0:125", "gpu[01-02]", "gpu"),
    ("35021740.batch", "OUT_OF_MEMORY", "0:125", "gpu01", ""),
    ("35021740.extern", "COMPLETED", "0:0", "gpu[01-02]", ""),
    ("35021741", "CANCELLED by 1234", "0:15", "gpu03", "gpu"),
    ("35021742", "NODE_FAIL", "0:0", "b22-[01-03]", "gpu"),
    ("35021743", "PENDING", "0:0", "None assigned", "gpu"),
    ("53601970_[0-99%4]", "PENDING", "0:0", "None assigned", "gpu"),
]
SACCT_COLS = ("JobID", "State", "ExitCode", "NodeList", "Partition")


def _aligned(header: Sequence[str], rows: Sequence[Sequence[str]], widths: Sequence[int], right: bool) -> str:
    def cell(v: str, w: int) -> str:
        v = v[:w]  # sinfo cuts silently
        return ("%*s" if right else "%-*s") % (w, v)

    lines = [" ".join(cell(h, w) for h, w in zip(header, widths))]
    lines += [" ".join(cell(v, w) for v, w in zip(r, widths)) for r in rows]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def sinfo_variants(seed: int = 37, count: int = 8) -> List[str]:
    """sinfo -N outputs of the same rows: shuffled columns, aligned (widths wide enough, the reason last so its
    spaces stay in one column) or ``|``-delimited, some with the -N -l date line, and the collection's format."""
    rng = random.Random(seed)
    out: List[str] = []
    for k in range(count):
        cols = list(SINFO_COLS[:3])
        rng.shuffle(cols)
        cols.append(SINFO_COLS[3])
        header = [c for c, dummy in cols]
        rows = [[r[i] for dummy, i in cols] for r in SINFO_ROWS]
        if k % 2:
            text = "|".join(header) + "\n" + "".join("|".join(r) + "\n" for r in rows)
        else:
            widths = [max([len(h)] + [len(r[i]) for r in rows]) + rng.randint(0, 3) for i, h in enumerate(header)]
            text = _aligned(header, rows, widths, right=bool(k % 4))
        if k % 3 == 0:
            text = "Sun Jul 16 21:28:05 2017\n" + text
        out.append(text)
    out.append("".join("%s|%s|%s|gpu:h100:8|gpu:h100:0(IDX:N/A)|%s\n" % (r[0], r[1], r[2], r[3]) for r in SINFO_ROWS))
    return out


def _fixed(header: Sequence[str], rows: Sequence[Sequence[str]], widths: Sequence[int]) -> str:
    def cell(v: str, w: int) -> str:
        return "%*s " % (w, v if len(v) <= w else v[: w - 1] + "+")  # sacct: cut, last char '+'

    lines = ["".join(cell(h, w) for h, w in zip(header, widths)), "".join("-" * w + " " for w in widths)]
    lines += ["".join(cell(v, w) for v, w in zip(r, widths)) for r in rows]
    return "\n".join(lines) + "\n"


def sacct_variants(seed: int = 37, count: int = 8) -> List[str]:
    """sacct outputs of the same rows: shuffled columns, fixed width with random widths (values cut with ``+``),
    ``-p``/``-P`` with a header, ``-n`` with its declared format."""
    rng = random.Random(seed)
    out: List[str] = []
    for k in range(count):
        order = list(range(len(SACCT_COLS)))
        rng.shuffle(order)
        header = [SACCT_COLS[i] for i in order]
        rows = [[r[i] for i in order] for r in SACCT_ROWS]
        if k % 3 == 0:
            widths = [rng.randint(9, 20) if h == "JobID" else rng.randint(4, 20) for h in header]
            out.append(_fixed(header, rows, widths))
        elif k % 3 == 1:
            trail = "|" if k % 2 else ""
            out.append("".join("|".join(r) + trail + "\n" for r in [header] + rows))
        else:
            out.append("$ sacct -a -P -n -o %s\n" % ",".join(header) + "".join("|".join(r) + "\n" for r in rows))
    return out


def squeue_variants() -> List[str]:
    """cluster-formats.md 4's default capture, with a reason holding commas, and its -l form."""
    base = (
        "  JOBID PARTITION NAME USER ST  TIME  NODES NODELIST(REASON)\n"
        "  12345     debug job1 dave  R   0:21     4 dev[9-12]\n"
        "  12346     debug job2 dave PD   0:00     8 (Resources)\n"
        "  12347       gpu job3  eve PD   0:00     2 (ReqNodeNotAvail, UnavailableNodes:cs[100,101,102])\n"
    )
    long_form = "Tue Aug 19 10:00:00 2026\n" + base.replace(" ST ", " STATE ").replace("  R ", " RUNNING ")
    return [base, long_form]


def pairs() -> List[Tuple[str, List[str]]]:
    return [("sinfo", sinfo_variants()), ("sacct", sacct_variants()), ("squeue", squeue_variants())]
