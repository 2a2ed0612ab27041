# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.health_check_install: the program's configuration as the controller builds it.

The copy to the node (check mode, diff, idempotence) runs in tests/integration/test_health_check.py.
"""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.cluster.plugins.action.health_check_install import ActionModule
from ansible_collections.gpuops.cluster.plugins.plugin_utils.health_check import program as _health_check
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import StepError

PROFILES = {"hgx": {"gpu_count": 8, "gpu_model": "H100"}}


def _args(**kw):
    args = {"config": {}, "policy_overrides": {}, "node_class": None, "profiles": {}}
    args.update(kw)
    return args


def _config(**kw):
    return ActionModule._config(None, _args(**kw), {"inventory_hostname": "gpu-node-01"})


def test_config_carries_the_merged_policy_and_the_profile():
    cfg = _config(node_class="hgx", profiles=PROFILES, policy_overrides={"xid": {"user_caused_severity": "P2"}})
    assert cfg["host"] == "gpu-node-01" and cfg["profile"] == PROFILES["hgx"]
    assert cfg["policy"]["xid"]["user_caused_severity"] == "P2"
    assert _health_check.policy_version(cfg["policy"]) != _health_check.policy_version(_config()["policy"])
    assert _config()["profile"] is None


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"config": {"policy": {}}}, "config.policy is set by the step"),
        ({"policy_overrides": {"thresholds": {"nope": 1}}}, "invalid gpuops policy: unknown policy key"),
        ({"node_class": "dgx", "profiles": PROFILES}, "unknown node class 'dgx'"),
        ({"config": {"collect_timeout": 90}}, "invalid health check configuration: collect_timeout"),
        ({"config": {"colect_timeout": 3}}, "unknown configuration key"),
    ],
)
def test_bad_input_is_a_clear_error(kw, match):
    with pytest.raises(StepError, match=match):
        _config(**kw)
