# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.preflight: the verdict of ``ansible-playbook gpuops.cluster.preflight``.

The playbook probes the sampled nodes and the Slurm controller (read-only) and hands the results here; this step adds
what only the controller knows - the audit callback's marker, the state directory, the store, the BMC credentials
in the environment - and asks ``plugin_utils/inventory/preflight.py`` for one line per gap. Writes nothing, also
outside check mode: the state directory and the store are checked with ``os.access`` and a TCP connect.
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, HostVarsOnce, host_var
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change.change_window import audit_marker
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inventory import preflight as _preflight


def _writable_dir(path):
    """(ok, why) for a directory the controller must write: it exists and is writable, or its parent is."""
    path = os.path.abspath(os.path.expanduser(path))
    if os.path.isdir(path):
        if os.access(path, os.W_OK | os.X_OK):
            return True, ""
        return False, "not writable by uid %d" % os.getuid()
    if os.path.exists(path):
        return False, "exists and is not a directory"
    parent = os.path.dirname(path)
    while parent and not os.path.isdir(parent):
        parent = os.path.dirname(parent)
    if parent and os.access(parent, os.W_OK | os.X_OK):
        return True, ""
    return False, "does not exist and %s is not writable by uid %d" % (parent or "its parent", os.getuid())


def _store(db_url, timeout=3.0):
    """(ok, why) for gpuops_db_url, read-only: SQLite's directory is writable, PostgreSQL's port answers."""
    try:
        url = urlsplit(db_url)
        port = url.port
    except ValueError as exc:
        return False, "not a URL: %s" % exc
    scheme = (url.scheme or "").split("+")[0]
    if scheme == "sqlite":
        path = url.path[1:] if url.path.startswith("//") else url.path
        return _writable_dir(os.path.dirname(path) or ".")
    if scheme in ("postgresql", "postgres"):
        host = url.hostname or "localhost"
        try:
            socket.create_connection((host, port or 5432), timeout=timeout).close()
        except OSError as exc:
            return False, "cannot connect to %s:%s: %s" % (host, port or 5432, exc.strerror or exc)
        return True, ""
    return False, "unknown scheme %r (sqlite or postgresql)" % scheme


class ActionModule(ControllerAction):
    NAME = "preflight"
    ARGUMENT_SPEC = dict(
        nodes=dict(type="dict", default={}),
        targets_total=dict(type="int", default=0),
        slurm=dict(type="dict", default={}),
        state_dir=dict(type="str", default=""),
        db_url=dict(type="str", default="", no_log=True),
        bmc=dict(type="dict", default={}),
        sample=dict(type="list", elements="str", default=[]),
        fail=dict(type="bool", default=True),
    )

    @staticmethod
    def _from_hosts(sample, hostvars):
        """``nodes`` and ``bmc`` read from the sampled hosts' variables: each probe (``__preflight_probe``, else not
        probed) and whether its BMC address, user and password are set (booleans only, never the values)."""
        hv = HostVarsOnce(hostvars)
        nodes, bmc = {}, {}
        for host in sample:
            known = host in hv
            nodes[host] = (host_var(hv, host, "__preflight_probe") if known else None) or {
                "unreachable": True,
                "msg": "not probed",
            }
            bmc[host] = {
                key: bool(known and str(host_var(hv, host, "gpuops_bmc_" + key, "") or ""))
                for key in ("address", "user", "password")
            }
        return nodes, bmc

    def step(self, args, check_mode, task_vars):
        if args["sample"]:
            args["nodes"], args["bmc"] = self._from_hosts(args["sample"], task_vars.get("hostvars") or {})
        ctl = {
            "audit": audit_marker() is not None,
            "state_dir": args["state_dir"],
            "state_dir_env": bool(os.environ.get("GPUOPS_STATE_DIR")),
            "db_url_set": bool(args["db_url"]),
            "bmc": {},
        }
        if args["state_dir"]:
            ctl["state_dir_ok"], ctl["state_dir_why"] = _writable_dir(args["state_dir"])
        if args["db_url"]:
            ctl["store_ok"], ctl["store_why"] = _store(args["db_url"])
        env_user, env_pass = bool(os.environ.get("GPUOPS_BMC_USER")), bool(os.environ.get("GPUOPS_BMC_PASSWORD"))
        for host, b in (args["bmc"] or {}).items():
            b = b if isinstance(b, dict) else {}
            ctl["bmc"][host] = {
                "address": bool(b.get("address")),
                "user": bool(b.get("user")) or env_user,
                "password": bool(b.get("password")) or env_pass,
            }
        gaps = _preflight.node_gaps(args["nodes"] or {})
        gaps += _preflight.slurm_gaps(args["slurm"] or {})
        gaps += _preflight.controller_gaps(ctl)
        out = _preflight.verdict(gaps, len(args["nodes"] or {}), args["targets_total"])
        out["items"] = sorted({g["item"] for g in out.pop("gaps")})
        out["msg"] = out["summary"]
        out["_ansible_verbose_always"] = True
        if not out["passed"] and args["fail"]:
            out["failed"] = True
        return out
