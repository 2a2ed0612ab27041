# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run gpuops.cluster.capture on the node and write the capture directory on the controller.

The files are written privately (0600, directories 0700) and atomically with ``_files.write_private_atomic``:
a link already in ``dest`` is replaced, never written through, and no file lands outside ``dest``.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase
from ansible_collections.gpuops.cluster.plugins.module_utils._files import ensure_private_dir, write_private_atomic


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
        ensure_private_dir(dest)
        real_dest = os.path.realpath(dest)
        written = []
        for rel in sorted(tree):
            rel = to_text(rel)
            parts = rel.split("/")
            if os.path.isabs(rel) or any(p in ("", ".", "..") for p in parts) or "\x00" in rel:
                raise AnsibleActionFail("capture: refusing to write outside dest: %r" % rel)
            # the directory must resolve inside dest; the file name itself is replaced by a rename, so a link
            # planted there is replaced, never followed
            real_parent = os.path.realpath(os.path.join(real_dest, *parts[:-1]))
            if real_parent != real_dest and not real_parent.startswith(real_dest + os.sep):
                raise AnsibleActionFail("capture: refusing to write outside dest: %r" % rel)
            try:
                ensure_private_dir(real_parent)
                write_private_atomic(os.path.join(real_parent, parts[-1]), to_text(tree[rel]))
            except OSError as exc:
                raise AnsibleActionFail("capture: cannot write %s: %s" % (rel, exc)) from exc
            written.append(rel)
        result.update(changed=False, dest=dest, files=written, meta=mod.get("meta", {}))
        return result
