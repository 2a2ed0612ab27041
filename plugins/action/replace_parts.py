# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.replace_parts: part serials, replacement verification and the evidence bundle."""

from __future__ import annotations

import os

from ansible_collections.gpuops.cluster.plugins.plugin_utils.replace import parts as _replace
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state_store as _state_store
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store.state import StateError
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError
from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson


def _serials(args):
    if args["serials"] is not None:
        return args["serials"]
    if args["facts"] is None:
        raise StepError("facts or serials is required")
    return _replace.part_inventory(args["facts"], args["bmc_remote"], _state_gpus(args))


def _state_gpus(args):
    """``state_gpus``, else the host's ``gpu.gpus`` in the controller state (the store of ``state_dir``/``db_url``,
    docs/state.md), else None."""
    if args["state_gpus"] is not None or not args["host"] or not (args["state_dir"] or args["db_url"]):
        return args["state_gpus"]
    try:
        store = _state_store.open_state(args["state_dir"], args["db_url"])
        try:
            return (store.load_host(args["host"]).get("gpu") or {}).get("gpus") or {}
        finally:
            store.close()
    except StateError as exc:
        raise StepError("cannot read the state of %s: %s" % (args["host"], exc)) from exc


def _verify(args):
    after = args["after"]
    if after is None:
        if args["facts"] is None:
            raise StepError("verify needs after or facts")
        after = _replace.part_inventory(args["facts"], args["bmc_remote"])
    fan_clean = _replace.fan_clean(args["bmc"]) if args["bmc"] else None
    res = _replace.verify(
        args["part"], args["component"] or None, args["before"], after, args["fan_confirmed"], fan_clean
    )
    # the comparison has its own "changed" (serial keys): it stays inside "verification", never the task's changed
    return {"verification": res, "verdict": res["verdict"], "reason": res["reason"], "after": after, "changed": False}


def _old_manifest(root):
    try:
        with open(os.path.join(root, "manifest.json"), encoding="utf-8") as fh:
            return _safejson.loads(fh.read(), what="manifest.json")
    except (OSError, ValueError):
        return {}


class ActionModule(ControllerAction):
    NAME = "replace_parts"
    ARGUMENT_SPEC = {
        "action": {"type": "str", "choices": ["inventory", "verify", "manifest", "verify_manifest"], "required": True},
        "facts": {"type": "dict"},
        "bmc_remote": {"type": "dict"},
        "state_gpus": {"type": "dict"},
        "state_dir": {"type": "path"},
        "db_url": {"type": "str"},
        "part": {"type": "str", "choices": list(_replace.PARTS)},
        "component": {"type": "str"},
        "before": {"type": "dict"},
        "after": {"type": "dict"},
        "fan_confirmed": {"type": "bool", "default": False},
        "bmc": {"type": "dict"},
        "root": {"type": "path"},
        "ticket": {"type": "str"},
        "host": {"type": "str"},
        "serials": {"type": "dict"},
        "write": {"type": "dict", "default": {}},
        "write_serials": {"type": "bool", "default": False},
        "extra": {"type": "dict", "default": {}},
    }
    REQUIRED_IF = [
        ("action", "verify", ["part", "before"]),
        ("action", "manifest", ["root", "ticket", "host", "part"]),
        ("action", "verify_manifest", ["root"]),
    ]

    def step(self, args, check_mode, task_vars):
        action = args["action"]
        if action == "inventory":
            return {"serials": _serials(args)}
        if action == "verify":
            return _verify(args)
        if action == "verify_manifest":
            return _replace.verify_manifest(args["root"])
        return self._manifest(args, check_mode)

    def _manifest(self, args, check_mode):
        root, serials = args["root"], _serials(args)
        writes = dict(args["write"])
        if args["write_serials"]:
            writes["serials.json"] = serials
        head = {k: args[k] for k in ("ticket", "host", "part", "component", "extra")}
        before = _old_manifest(root)
        m, written = _replace.write_bundle(root, head, serials, writes, check_mode=check_mode)
        out = {
            "changed": True,
            "path": os.path.join(root, "manifest.json"),
            "files": len(m["files"]),
            "written": written,
            "serials": serials,
        }
        if self._task.diff:
            out["diff"] = {"before": before, "after": m, "before_header": out["path"], "after_header": out["path"]}
        return out
