# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.reservation_window: a Slurm MAINT reservation the change guard created or deleted,
written to the service ledger as a maintenance window (planned downtime, docs/service.md).

Thin glue: maps Slurm NodeNames back to inventory names (``gpuops_slurm_node_name``), opens the store
(``state_dir`` / ``db_url``: the role passes ``gpuops_state_dir`` / ``gpuops_db_url``) and hands the scontrol text to ``ledger_windows.reservation_to_ledger``.
Without a store it records nothing and says so (the reservation itself does not need one).
"""

from __future__ import annotations

import time

from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError, host_var
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import reservations as _resv
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import StoreError, open_store
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_windows as _lw


class ActionModule(ControllerAction):
    NAME = "gpuops.cluster.reservation_window"
    ARGUMENT_SPEC = {
        "name": {"type": "str", "required": True},
        "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
        "text": {"type": "str"},
        "timezone": {"type": "str", "default": "UTC"},
        "now": {"type": "float"},
        "state_dir": {"type": "path"},
        "db_url": {"type": "str"},
    }
    REQUIRED_IF = [("state", "present", ("text",))]

    def step(self, args, check_mode, task_vars):
        state_dir, db_url = args["state_dir"], args["db_url"]
        if not state_dir and not db_url:
            return {"changed": False, "recorded": False,
                    "msg": "reservation %s not recorded in the service ledger: no gpuops_state_dir or gpuops_db_url"
                    % args["name"]}  # fmt: skip
        hostvars = task_vars.get("hostvars") or {}
        host_of = {}
        for host in list(hostvars):
            slurm_name = host_var(hostvars, host, "gpuops_slurm_node_name")
            if isinstance(slurm_name, str) and slurm_name:
                host_of[slurm_name] = host
        now = args["now"] if args["now"] is not None else time.time()
        try:
            store = open_store(state_dir=state_dir, db_url=db_url)
            try:
                out = _lw.reservation_to_ledger(
                    store, args["name"], args["state"], now, text=args["text"], timezone=args["timezone"],
                    host_of=host_of, check_mode=check_mode,
                )  # fmt: skip
            finally:
                store.close()
        except (_resv.ReservationError, StoreError) as exc:
            raise StepError("reservation %s: %s" % (args["name"], exc)) from None
        out["recorded"] = (
            not check_mode and out.get("window") is not None or bool(out.get("ended") or out.get("removed"))
        )
        return out
