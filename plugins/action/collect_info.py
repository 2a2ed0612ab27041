# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.collect_info: where the node's evidence is parsed (``parse_on``).

``parse_on: controller`` (the default, as in roles/inspect) has the node run the tools and send their output
back - by one POSIX shell command (``capture_via: shell``, the default: no Python on the node) or by
``gpuops.cluster.capture`` (``capture_via: python``) - and parses it here with the capture-directory collectors
(``_livetree``), in this task's worker process: the node imports no parser (docs/performance.md, "Live path").
``parse_on: node`` runs the collect_info module on the node: it runs the tools and parses there (NVML when pynvml
is installed). A capture_dir is always read by the module, wherever the task runs.
"""

from __future__ import annotations

import json

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

PARSE_ON = ("node", "controller")
CAPTURE_VIA = ("shell", "python")
#: the one default live mode (documented in plugins/modules/collect_info.py; roles/inspect defaults to the same)
DEFAULT_PARSE_ON = "controller"
DEFAULT_CAPTURE_VIA = "shell"
#: what reads the shell capture's script from stdin on the node
SHELL = "/bin/sh"
#: collect_info options the node-side capture takes as they are
_CAPTURE_ARGS = ("timeout", "kernel_since", "sysfs_root", "mounts", "services")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        parse_on = args.pop("parse_on", None) or DEFAULT_PARSE_ON
        if parse_on not in PARSE_ON:
            raise AnsibleActionFail(
                "collect_info: parse_on must be one of %s, not %r" % (", ".join(PARSE_ON), parse_on)
            )
        via = args.pop("capture_via", None) or DEFAULT_CAPTURE_VIA
        max_bytes = args.pop("capture_max_bytes", None)
        if via not in CAPTURE_VIA:
            raise AnsibleActionFail(
                "collect_info: capture_via must be one of %s, not %r" % (", ".join(CAPTURE_VIA), via)
            )
        if parse_on == "node" or args.get("capture_dir"):
            result.update(
                self._execute_module(module_name="gpuops.cluster.collect_info", module_args=args, task_vars=task_vars)
            )
            return result
        fmt = args.get("result_format") or "dict"
        if fmt not in ("dict", "json", "capture"):
            raise AnsibleActionFail("collect_info: result_format must be dict, json or capture, not %r" % (fmt,))
        domains = list(args.get("domains") or ())
        if not domains:
            # imported here, not at the top: this runs in a worker forked per host, and the collectors are imported
            # only where they are used (result_format capture: by inspect_cluster, once)
            from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import DEFAULT_LIVE_DOMAINS

            domains = list(DEFAULT_LIVE_DOMAINS)
        cap_args = {k: args[k] for k in _CAPTURE_ARGS if args.get(k) is not None}
        cap_args["domains"] = domains
        if "dcgm" in domains:
            cap_args["dcgm_level"] = 1  # what collect_info runs live (dcgmi diag -r 1)
        cap_args["pack"] = True
        if via == "shell":
            mod = self._shell_capture(cap_args, max_bytes)
        else:
            mod = self._execute_module(module_name="gpuops.cluster.capture", module_args=cap_args, task_vars=task_vars)
        if mod.get("failed") or mod.get("unreachable"):
            result.update(mod)
            return result
        if fmt == "capture":
            # parsed later, by inspect_cluster (its workers): this worker imports no parser
            result.update(changed=False, capture_packed=mod.get("packed"), parsed_on="controller")
            return result
        try:
            timeout = float(args.get("timeout") or 30)
        except (TypeError, ValueError):
            raise AnsibleActionFail("collect_info: timeout must be a number, not %r" % (args.get("timeout"),)) from None
        options = {
            "node": {"mounts": args.get("mounts") or [], "services": args.get("services")},
            "bmc": {"mode": "inband"},
        }
        from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import livetree as _livetree

        facts = _livetree.parse_packed(mod.get("packed"), domains=domains, timeout=timeout, options=options)
        if fmt == "json":
            result.update(changed=False, facts_json=json.dumps(facts, separators=(",", ":")), parsed_on="controller")
        else:
            result.update(changed=False, facts=facts, parsed_on="controller")
        return result

    def _shell_capture(self, cap_args, max_bytes=None):
        """The capture by one shell command on the node (``_shcapture``): {"packed": ...} as the capture module
        returns it, or a failed result saying why. It only reads, so it runs in check mode too (as the module).

        ``max_bytes`` (``capture_max_bytes``): the node's script cuts its answer one byte past it, and an answer over
        it is not read (a failed result: the inspection's ``collector.error`` for this node, the others go on).
        ansible-core's connection reads the node's whole stdout before this sees it, so a hostile node can still
        make that read large; what is kept and parsed here is bounded, and parsing is linear (``_shanswer``)."""
        from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.livecapture import pack
        from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import shanswer as _shanswer
        from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import shcapture as _shcapture

        options = {
            "timeout": cap_args.get("timeout") or 30,
            "kernel_since": cap_args.get("kernel_since"),
            "sysfs_root": cap_args.get("sysfs_root"),
            "dcgm_level": cap_args.get("dcgm_level"),
            "domains": cap_args["domains"],
            "node_options": {"mounts": cap_args.get("mounts") or [], "services": cap_args.get("services")},
            "max_bytes": max_bytes,
        }
        try:
            options = _shcapture.check_options(options)
            token = _shcapture.new_token()
            script = _shcapture.build_script(token, options)
        except _shcapture.ShellCaptureError as exc:
            raise AnsibleActionFail("collect_info: %s" % exc) from None
        # the script goes in on stdin, as a pipelined module does: over SSH a command without stdin data gets a
        # terminal (-tt), which would turn every line end of the tools' output into CR LF
        res = self._low_level_execute_command(SHELL, sudoable=True, in_data=script.encode("utf-8"))
        stdout = res.pop("stdout", None) or ""
        if isinstance(stdout, bytes):
            stdout = stdout.decode("utf-8", errors="surrogateescape")
        too_big = _shanswer.answer_size_error(stdout, options["max_bytes"])
        if too_big:
            return {"failed": True, "msg": too_big}
        if "@@gpuops:" + token not in stdout:
            return {
                "failed": True,
                "msg": "the node's shell capture did not run (rc %s): %s"
                % (res.get("rc"), str(res.get("stderr") or "").strip()[-500:]),
            }
        return {"packed": pack(_shcapture.to_tree(stdout, token, options))}
