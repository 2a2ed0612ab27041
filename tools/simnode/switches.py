"""Test-bed fault switches of the fake nvidia-smi (documented in tests/testbed/README.md, "Fault switches").

They live in the node state (the fake tools read it on every call), not in the fault catalogue: they change how a
*tool* answers an action, not what the hardware reports.

* ``state["gpu_reset_fault"] = {"mode": "fail"|"hang", "gpus": [indices] (default every GPU), "message": text,
  "rc": int, "hang_seconds": float}``: ``nvidia-smi -r`` prints the real "could not be reset" error for those GPUs
  and exits ``rc`` (255, nvidia-smi's "other error"), or never returns (hangs until ``hang_seconds`` pass or the
  switch is cleared, then exits 255 with a timeout message). ``absent`` / ``None`` = resets work.
* A process on a GPU is ordinary state: ``state["gpus"][i]["processes"] = [{"pid", "name", "type", "used_mib"}]``;
  every view shows it (``-q``, ``-q -x``, the table, ``--query-compute-apps``) and ``nvidia-smi -r`` refuses.
"""

from __future__ import annotations

DEFAULT_RESET_ERROR = "Unknown Error"
RC_OTHER = 255

#: --query-compute-apps fields: name -> (value of (gpu, process), unit or None)
_APP_FIELDS = {
    "pid": (lambda g, p: str(p["pid"]), None),
    "process_name": (lambda g, p: p["name"], None),
    "name": (lambda g, p: p["name"], None),
    "used_gpu_memory": (lambda g, p: str(p.get("used_mib", 0)), "MiB"),
    "used_memory": (lambda g, p: str(p.get("used_mib", 0)), "MiB"),
    "gpu_bus_id": (lambda g, p: g["bus_id"], None),
    "gpu_uuid": (lambda g, p: g["uuid"], None),
    "gpu_serial": (lambda g, p: g["serial"], None),
    "gpu_name": (lambda g, p: g["name"], None),
    "timestamp": (lambda g, p: "2026/12/02 10:00:00.000", None),
}
_APP_HEADERS = {"name": "process_name", "used_memory": "used_gpu_memory"}


def reset_fault(state: dict, targets: list):
    """(mode, switch) when the reset switch applies to one of ``targets``, else (None, None)."""
    sw = state.get("gpu_reset_fault")
    if not isinstance(sw, dict) or sw.get("mode") not in ("fail", "hang"):
        return None, None
    wanted = sw.get("gpus")
    if wanted is not None and not any(g["index"] in wanted for g in targets):
        return None, None
    return sw["mode"], sw


def reset_error_text(targets: list, sw: dict) -> str:
    wanted = sw.get("gpus")
    bad = [g for g in targets if wanted is None or g["index"] in wanted]
    msg = str(sw.get("message") or DEFAULT_RESET_ERROR)
    return "The following GPUs could not be reset:\n%s\n" % "".join("  GPU %s: %s\n" % (g["bus_id"], msg) for g in bad)


def hang_released(state: dict) -> bool:
    """A hanging reset returns once its switch is cleared (the bed's reset rewrites the state)."""
    sw = state.get("gpu_reset_fault") if isinstance(state, dict) else None
    return not (isinstance(sw, dict) and sw.get("mode") == "hang")


def compute_apps(state: dict, fields: list, fmt: str):
    """`--query-compute-apps=... --format=csv[,noheader][,nounits]` -> (stdout, rc)."""
    opts = [o.strip() for o in (fmt or "csv").split(",")]
    if "csv" not in opts:
        return '"%s" is not a valid format.\n' % fmt, 2
    for f in fields:
        if f not in _APP_FIELDS:
            return 'Field "%s" is not a valid field to query.\n\n' % f, 2
    lines = []
    if "noheader" not in opts:
        hdr = []
        for f in fields:
            unit = _APP_FIELDS[f][1]
            name = _APP_HEADERS.get(f, f)
            hdr.append(name if unit is None or "nounits" in opts else "%s [%s]" % (name, unit))
        lines.append(", ".join(hdr))
    for g in state["gpus"]:
        for p in g.get("processes") or []:
            row = []
            for f in fields:
                fn, unit = _APP_FIELDS[f]
                val = fn(g, p)
                row.append(val if unit is None or "nounits" in opts else "%s %s" % (val, unit))
            lines.append(", ".join(row))
    return ("\n".join(lines) + "\n") if lines else "", 0
