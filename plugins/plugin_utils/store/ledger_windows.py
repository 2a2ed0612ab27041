# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Maintenance windows into the ledger (issue 39, docs/service.md "Planned downtime").

The service report counts a node's ``down`` time inside a maintenance window covering it as planned downtime. The
windows are inventory data (``gpuops_maintenance_windows`` per host, docs/windows.md: weekly slots, dated windows,
freezes); each inspection writes the concrete occurrences around its run time into ``maintenance_windows``, so the
report reads the windows that were in force, not the ones defined when the report runs.

- :func:`occurrences`: the open intervals (freezes cut out) of each host's windows in [lo, hi), grouped into rows
  ``{window_id, name, starts_at, ends_at, scope: {"hosts": [...]}}``; the id is derived from the name and the
  interval, so the same occurrence seen by many runs is one row. A host whose windows do not validate is reported
  in ``invalid`` (the change guard refuses it too), never silently dropped.
- :func:`record_windows`: upsert the rows in one transaction under the ledger lock; an existing row's hosts are
  the union of what every run saw (a run limited to some hosts never narrows a window).
- :func:`reservation_row`, :func:`record_reservation`, :func:`end_reservation`: a Slurm MAINT reservation the change
  guard creates (``change/reservations.py`` reads ``scontrol show reservation``) is a window too, ``slurm:<name>``
  over the reservation's StartTime..EndTime and its nodes (as inventory names); recorded when the guard creates it
  (or finds it), its end moved to the deletion time when the guard deletes it early (a reservation deleted before
  it began leaves no window).

Pure controller code, no Ansible imports.
"""

from __future__ import annotations

import datetime
import hashlib
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import reservations as _resv
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import windows as _windows

try:
    import sqlalchemy as sa
except ImportError:  # sanity import test
    sa = None

LOCK = "ledger"
#: how far back a run writes occurrences: a week covers a weekly schedule and a missed weekend of runs
LOOKBACK_S = 8 * 86400.0
#: and ahead: a window that opens before the next run is known now
AHEAD_S = 86400.0
_UTC = datetime.timezone.utc


def _window_id(name: str, start: float, end: float) -> str:
    digest = hashlib.sha256(("%s|%.0f|%.0f" % (name, start, end)).encode("utf-8")).hexdigest()[:24]
    return "inv-%s" % digest


def occurrences(
    windows_by_host: Dict[str, Any], now: float, lookback_s: float = LOOKBACK_S, ahead_s: float = AHEAD_S
) -> Dict[str, Any]:
    """``{rows, invalid}``: the windows' occurrences in [now - lookback_s, now + ahead_s) per (name, interval) with
    the hosts they cover; ``invalid``: {host: message} for hosts whose definitions do not validate."""
    lo = datetime.datetime.fromtimestamp(float(now) - lookback_s, tz=_UTC)
    hi = datetime.datetime.fromtimestamp(float(now) + ahead_s, tz=_UTC)
    found: Dict[Tuple[str, float, float], List[str]] = {}
    invalid: Dict[str, str] = {}
    for host, defined in sorted(windows_by_host.items()):
        if not defined:
            continue
        try:
            normalized = _windows.validate(defined, "gpuops_maintenance_windows")
        except _windows.WindowError as exc:
            invalid[host] = str(exc)
            continue
        for start, end, window in _windows.effective_intervals(normalized, lo, hi):
            key = (str(window["name"]), start.timestamp(), end.timestamp())
            found.setdefault(key, []).append(host)
    rows = [
        {
            "window_id": _window_id(name, start, end),
            "name": name[:255],
            "starts_at": start,
            "ends_at": end,
            "scope": {"hosts": sorted(set(hosts))},
        }
        for (name, start, end), hosts in sorted(found.items())
    ]
    return {"rows": rows, "invalid": invalid}


def record_windows(store: Any, rows: List[Dict[str, Any]], tables: Optional[Any] = None) -> Dict[str, int]:
    """Upsert ``rows`` (from :func:`occurrences`) into ``maintenance_windows``; returns {written, widened}."""
    if not rows:
        return {"written": 0, "widened": 0}
    if tables is None:
        from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import (  # pylint: disable=import-outside-toplevel
            ledger_schema,
        )

        tables = ledger_schema.tables()
    mw = tables.tables["maintenance_windows"]
    out = {"written": 0, "widened": 0}
    with store.begin(lock=LOCK) as conn:
        ids = [r["window_id"] for r in rows]
        have = dict(conn.execute(sa.select(mw.c.window_id, mw.c.scope).where(mw.c.window_id.in_(ids))).all())
        for row in rows:
            old = have.get(row["window_id"])
            if old is None:
                conn.execute(mw.insert(), dict(row))
                out["written"] += 1
                continue
            old_hosts = set((old or {}).get("hosts") or []) if isinstance(old, dict) else set()
            hosts = old_hosts | set(row["scope"]["hosts"])
            if hosts != old_hosts:
                conn.execute(
                    mw.update().where(mw.c.window_id == row["window_id"]).values(scope={"hosts": sorted(hosts)})
                )
                out["widened"] += 1
    return out


# ---------------------------------------------------------------------------------------------- Slurm reservations
RESERVATION_PREFIX = "slurm:"


def reservation_row(win: Dict[str, Any], host_of: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """A ``maintenance_windows`` row from ``reservations.window`` output; ``host_of`` maps a Slurm NodeName to its
    inventory name (``gpuops_slurm_node_name``), others keep their Slurm name. The id is derived from the name and
    the start, so the same reservation recorded twice (or with a new EndTime) is one row."""
    host_of = host_of or {}
    name = RESERVATION_PREFIX + str(win["name"])
    digest = hashlib.sha256(("%s|%.0f" % (name, float(win["start"]))).encode("utf-8")).hexdigest()[:24]
    scope = {"all": True} if win.get("all") else {"hosts": sorted({host_of.get(h, h) for h in win["hosts"]})}
    return {
        "window_id": "resv-%s" % digest,
        "name": name[:255],
        "starts_at": float(win["start"]),
        "ends_at": float(win["end"]),
        "scope": scope,
    }


def _tables(tables: Optional[Any]) -> Any:
    if tables is not None:
        return tables
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import (  # pylint: disable=import-outside-toplevel
        ledger_schema,
    )

    return ledger_schema.tables()


def record_reservation(store: Any, row: Dict[str, Any], tables: Optional[Any] = None) -> str:
    """Insert or update one reservation row (its EndTime and nodes as scontrol now prints them); returns
    ``written``, ``updated`` or ``unchanged``."""
    mw = _tables(tables).tables["maintenance_windows"]
    with store.begin(lock=LOCK) as conn:
        old = conn.execute(sa.select(mw.c.ends_at, mw.c.scope).where(mw.c.window_id == row["window_id"])).first()
        if old is None:
            conn.execute(mw.insert(), dict(row))
            return "written"
        if float(old.ends_at) == row["ends_at"] and old.scope == row["scope"]:
            return "unchanged"
        conn.execute(
            mw.update()
            .where(mw.c.window_id == row["window_id"])
            .values(ends_at=row["ends_at"], scope=row["scope"], name=row["name"])
        )
        return "updated"


def end_reservation(store: Any, name: str, now: float, tables: Optional[Any] = None) -> Dict[str, int]:
    """The guard deleted reservation ``name`` at ``now``: a window of it still open ends now, one not yet begun is
    removed (it never held a node). Returns {ended, removed}."""
    mw = _tables(tables).tables["maintenance_windows"]
    out = {"ended": 0, "removed": 0}
    full = (RESERVATION_PREFIX + str(name))[:255]
    with store.begin(lock=LOCK) as conn:
        rows = conn.execute(
            sa.select(mw.c.window_id, mw.c.starts_at).where(
                mw.c.name == full, mw.c.window_id.like("resv-%"), mw.c.ends_at > now
            )
        ).all()
        for window_id, starts_at in rows:
            if float(starts_at) >= now:
                conn.execute(mw.delete().where(mw.c.window_id == window_id))
                out["removed"] += 1
            else:
                conn.execute(mw.update().where(mw.c.window_id == window_id).values(ends_at=float(now)))
                out["ended"] += 1
    return out


def reservation_to_ledger(
    store: Any, name: str, state: str, now: float, text: Optional[str] = None, check_mode: bool = False, **opts: Any
) -> Dict[str, Any]:
    """What the change guard does after it created (``present``: ``text`` is ``scontrol show reservation <name>``
    read after the create) or deleted (``absent``) reservation ``name``; ``opts``: ``timezone`` the text's times
    are in (default UTC), ``host_of`` Slurm NodeName -> inventory name. Returns ``{changed, msg, window}``; a
    reservation that is not MAINT is not a maintenance window (left out, said so); text that is not scontrol's, or
    a MAINT reservation without a usable start, end or nodes, raises ``reservations.ReservationError``."""
    if state == "absent":
        if check_mode:
            return {
                "changed": False,
                "msg": "check mode: would end the window of reservation %s" % name,
                "window": None,
            }
        done = end_reservation(store, name, now)
        changed = bool(done["ended"] or done["removed"])
        msg = "reservation %s: %d window(s) ended, %d not begun removed" % (name, done["ended"], done["removed"])
        return {"changed": changed, "msg": msg, "window": None, **done}
    rec = _resv.find(_resv.parse(text), name)
    if rec is None:
        raise _resv.ReservationError("scontrol shows no reservation named %s" % name)
    if not _resv.is_maintenance(rec):
        return {
            "changed": False,
            "msg": "reservation %s is not a maintenance reservation (Flags=%s): no window" % (name, rec.get("Flags")),
            "window": None,
        }
    row = reservation_row(_resv.window(rec, opts.get("timezone") or "UTC"), opts.get("host_of"))
    if check_mode:
        return {"changed": False, "msg": "check mode: would record window %s" % row["name"], "window": row}
    how = record_reservation(store, row)
    return {"changed": how != "unchanged", "msg": "window %s %s" % (row["name"], how), "window": row}
