# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.gpu_reset_record: record verified GPU resets in the controller state directory.

Each GPU becomes a ``resets[]`` entry and a clear marker of the host's state (``_state.record_gpu_reset``), so
the policy's clear rule ``needs_reset_record`` sees it (docs/state.md). Check mode reports what it would record.
"""

from __future__ import annotations

import copy

from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import parse_time, utcnow_iso
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state as _state, state_store as _state_store
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError


def _record_all(state, host, gpus, when):
    for gpu in gpus:
        _state.record_gpu_reset(state, host, gpu["bus_id"], gpu["serial"], when)
    return state


class ActionModule(ControllerAction):
    NAME = "gpu_reset_record"
    ARGUMENT_SPEC = dict(
        state_dir=dict(type="path", required=True),
        db_url=dict(type="str"),
        host=dict(type="str", required=True),
        gpus=dict(
            type="list",
            elements="dict",
            required=True,
            options=dict(bus_id=dict(type="str", required=True), serial=dict(type="str")),
        ),
        time=dict(type="str"),
        lock_timeout=dict(type="float", default=30.0),
    )

    def step(self, args, check_mode, task_vars):
        host, sdir, gpus = args["host"], args["state_dir"], args["gpus"]
        when = args["time"] or utcnow_iso()
        if not sdir:
            raise StepError("the reset record needs a state directory (gpuops_state_dir)")
        if parse_time(when) is None:
            raise StepError("cannot record the reset: not a time: %r" % (when,))
        seen = {}

        def record(hs):
            seen["before"] = copy.deepcopy(hs)
            return _record_all(hs, host, gpus, when)

        try:
            path = _state.host_state_path(sdir, host)  # refuses a host name that is not a safe file name
            store = _state_store.open_state(sdir, args["db_url"])  # the database when gpuops_db_url is set
            try:
                path = store.where(host)
                if check_mode or not gpus:  # nothing written: the state as it would be
                    after = record(store.load_host(host))
                else:
                    after = store.update_host(host, record, timeout=args["lock_timeout"])
            finally:
                store.close()
        except _state.StateError as exc:
            raise StepError("cannot record the reset: %s" % exc) from exc
        before = seen["before"]
        out = dict(
            changed=bool(gpus),
            recorded=len(gpus),
            path=path,
            resets=after["resets"][-len(gpus) :] if gpus else [],
        )
        if self._task.diff:
            out["diff"] = {
                "before": {"resets": before["resets"], "clears": before["clears"]},
                "after": {"resets": after["resets"], "clears": after["clears"]},
            }
        return out
