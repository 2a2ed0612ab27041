# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build the node-side health check on the controller and install it: see plugins/modules/health_check_install.py."""

from __future__ import annotations

import os
import shutil
import tempfile

from ansible.module_utils.common.text.converters import to_text

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy
from ansible_collections.gpuops.cluster.plugins.plugin_utils.health_check import (
    bundle as _health_check_bundle,
    program as _health_check,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError, plain


class ActionModule(ControllerAction):
    NAME = "gpuops.cluster.health_check_install"
    TRANSFERS_FILES = True
    _requires_connection = True
    ARGUMENT_SPEC = {
        "dest": {"type": "path", "required": True},
        "config": {"type": "dict", "default": {}},
        "policy_overrides": {"type": "dict", "default": {}},
        "node_class": {"type": "str"},
        "profiles": {"type": "dict", "default": {}},
        "interpreter": {"type": "path", "default": "/usr/bin/python3"},
        "mode": {"type": "raw", "default": "0755"},
    }

    def _config(self, args, task_vars):
        """The program's configuration: ``config`` + the merged policy + this host's profile, validated."""
        host = to_text(task_vars.get("inventory_hostname") or "")
        config = plain(args["config"])
        for key in ("policy", "profile", "host", "version"):
            if key in config:
                raise StepError("config.%s is set by the step itself (use policy_overrides, node_class)" % key)
        try:
            policy = _policy.merge_policy(_policy.DEFAULT_POLICY, plain(args["policy_overrides"]))
            profile = _inspect.resolve_profiles(
                {host: {"node_class": args["node_class"]}}, plain(args["profiles"]), policy
            )[host]
        except _policy.PolicyError as exc:
            raise StepError("invalid gpuops policy: %s" % exc) from exc
        config.update(policy=policy, profile=profile, host=host)
        slurm_name = to_text(task_vars.get("gpuops_slurm_node_name") or "")
        if slurm_name and not config.get("node_name"):  # the node's Slurm name (docs/inventory-plugin.md)
            config["node_name"] = slurm_name
        try:
            _health_check.load_config(config)
        except _health_check.ConfigError as exc:
            raise StepError("invalid health check configuration: %s" % exc) from exc
        return config

    def step(self, args, check_mode, task_vars):
        config = self._config(args, task_vars)
        data = _health_check_bundle.build(config, args["interpreter"])
        version = _health_check_bundle.version_of(data)
        tmpdir = tempfile.mkdtemp(prefix="gpuops-health-check-")
        try:
            src = os.path.join(tmpdir, "gpuops-health-check")
            with open(src, "wb") as fh:
                fh.write(data)
            task = self._task.copy()
            task.args.clear()
            task.args.update(src=src, dest=args["dest"], mode=args["mode"], owner="root", group="root")
            copy = self._shared_loader_obj.action_loader.get(
                "ansible.legacy.copy",
                task=task,
                connection=self._connection,
                play_context=self._play_context,
                loader=self._loader,
                templar=self._templar,
                shared_loader_obj=self._shared_loader_obj,
            )
            result = copy.run(task_vars=task_vars)
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
        if result.get("failed"):
            raise StepError("installing %s failed: %s" % (args["dest"], result.get("msg")))
        changed = bool(result.get("changed"))
        out = {
            "changed": changed,
            "dest": args["dest"],
            "version": version,
            "policy_version": _health_check.policy_version(config["policy"]),
            "profile": config["profile"],
            "size": len(data),
        }
        if self._task.diff:
            before = "another build or none" if changed else "version %s" % version
            out["diff"] = {"before": {args["dest"]: before}, "after": {args["dest"]: "version %s" % version}}
        return out
