# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run gpuops.cluster.capture on the node and write the capture directory on the controller."""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        dest = self._task.args.get("dest")
        if not dest:
            raise AnsibleActionFail("capture: dest is required")
        dest = os.path.abspath(os.path.expanduser(to_text(dest)))
        module_args = dict(self._task.args)
        mod = self._execute_module(module_name="gpuops.cluster.capture", module_args=module_args, task_vars=task_vars)
        if mod.get("failed") or mod.get("unreachable"):
            result.update(mod)
            return result
        tree = mod.pop("tree", {}) or {}
        real_dest = os.path.realpath(dest)
        written = []
        for rel in sorted(tree):
            target = os.path.realpath(os.path.join(real_dest, rel))
            if not target.startswith(real_dest + os.sep):
                raise AnsibleActionFail("capture: refusing to write outside dest: %r" % rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(tree[rel])
            written.append(rel)
        result.update(changed=False, dest=dest, files=written, meta=mod.get("meta", {}))
        return result
