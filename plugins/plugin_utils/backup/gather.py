# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the backup steps (``gpuops.cluster.backup``, ``restore_plan``, ``restore_drill``) read from the task: the
signing key (docs/backup.md "Signed snapshots") and the configured secret values no stored object may hold."""

from __future__ import annotations

import os

from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import keys as _backup_keys

from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import objects as _backup_objects

from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import secrets as _backup_secrets
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import plain


#: Variables templated for :func:`_backup_secrets.configured_secrets` (their values may be templates or vault strings).
SECRET_VARS = ("gpuops_bmc_password", "backup_bmc_password", "gpuops_db_url", "ansible_password", "ansible_ssh_pass",
               "ansible_become_password", "ansible_become_pass")  # fmt: skip
#: Task vars never searched for secret values (huge, or copies of the rest).
_SKIP_VARS = ("hostvars", "vars", "groups", "ansible_facts", "omit", "play_hosts", "environment")


def templated_var(action, task_vars, name):
    """``task_vars[name]`` templated (a vault string decrypted); None when unset or not templatable."""
    if name not in task_vars:
        return None
    templar = getattr(action, "_templar", None)
    try:
        value = templar.template(task_vars[name]) if templar is not None else task_vars[name]
    except Exception:  # noqa: BLE001 - an undefined or broken variable is simply not there
        return None
    return plain(value) if value not in (None, "") else None


def signing_key(action, args, task_vars, create, outside=()):
    """The backup signing key of a step: option ``signing_key``, else the variable ``gpuops_backup_signing_key``,
    else the key file (``key_file``, ``GPUOPS_BACKUP_KEY_FILE``, ``~/.config/gpuops/backup.key``)."""
    value = args.get("signing_key") or templated_var(action, task_vars, _backup_objects.KEY_VAR)
    return _backup_keys.resolve_key(value, args.get("key_file"), args["backup_dir"], create, outside)


def secrets_of(action, task_vars, key):
    """Every configured secret value (``(where, value)``): the environment, the task's variables, the key."""
    named = {n: templated_var(action, task_vars, n) for n in SECRET_VARS}
    rest = {k: plain(v) for k, v in task_vars.items() if k not in _SKIP_VARS and k not in named}
    extra = [("the backup signing key", key.secret_text())] if key is not None else []
    return _backup_secrets.configured_secrets(os.environ, dict(rest, **{k: v for k, v in named.items() if v}), extra)
