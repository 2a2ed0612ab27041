# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.state_import: move a controller's file state into the shared database, once
(docs/state.md "Moving to the database"). Check mode counts and writes nothing."""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state_store as _state_store
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store.state import StateError


class ActionModule(ControllerAction):
    NAME = "state_import"
    ARGUMENT_SPEC = dict(
        state_dir=dict(type="path", required=True),
        db_url=dict(type="str", required=True),
        overwrite=dict(type="bool", default=False),
    )

    def step(self, args, check_mode, task_vars):
        if not args["db_url"]:
            raise StepError("state_import needs the database URL (gpuops_db_url)")
        try:
            store = _state_store.open_state(db_url=args["db_url"])
            try:
                result = _state_store.import_file_state(
                    args["state_dir"], store, overwrite=args["overwrite"], write=not check_mode
                )
                result["db"] = store.where()
            finally:
                store.close()
        except StateError as exc:
            raise StepError("state import: %s" % exc) from exc
        return result
