# -*- coding: utf-8 -*-
"""SLA targets as policy data (policy key ``sla``, docs/service.md): defaults, per-customer profiles, clear errors."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy
from ansible_collections.gpuops.cluster.plugins.plugin_utils.service import sla as _sla


def test_the_default_policy_carries_the_contract_targets():
    sla = _policy.merge_policy(None, {})["sla"]
    assert sla["targets"]["P0"] == {"respond": "15m", "locate": "4h", "restore": "2h"}
    assert sla["targets"]["P1"] == {"respond": "30m", "locate": "next_day", "restore": "24h"}
    assert sla["targets"]["P2"]["locate"] == "3bd" and sla["targets"]["P3"]["respond"] == "1bd"
    assert sla["retention_days"] == 400 and sla["capacity_trigger"] == 0.7
    assert sla is not _sla.DEFAULT_SLA and sla == _sla.DEFAULT_SLA


def test_a_customer_profile_and_a_site_target_override_merge_over_the_defaults():
    sla = _policy.merge_policy(
        None, {"sla": {"targets": {"P1": {"restore": "12h"}}, "profiles": {"acme": {"P0": {"restore": "1h"}}}}}
    )["sla"]
    assert _sla.targets_for("P1", sla)["restore"] == "12h"
    assert _sla.targets_for("P1", sla)["respond"] == "30m"  # the other clocks keep the contract's values
    assert _sla.targets_for("P0", sla, "acme")["restore"] == "1h"


@pytest.mark.parametrize(
    "override,key",
    [
        ({"targets": {"P1": {"restore": "soon"}}}, "sla.targets.P1.restore"),
        ({"targets": {"P2": {"restore": 5}}}, "sla.targets.P2.restore"),
        ({"targets": {"P0": {"fix": "1h"}}}, "sla.targets.P0.fix"),
        ({"targets": {"P7": {"respond": "1h"}}}, "sla.targets.P7"),
        ({"profiles": {"acme": {"P9": {"respond": "1h"}}}}, "sla.profiles.acme.P9"),
        ({"profiles": {"acme": {"P1": {"respond": "1 hour"}}}}, "sla.profiles.acme.P1.respond"),
        ({"profiles": {"acme": ["P1"]}}, "sla.profiles.acme"),
        ({"bogus": 1}, "sla.bogus"),
        ({"at_risk_share": 1.5}, "sla.at_risk_share"),
        ({"open_severities": ["P0", "P5"]}, "sla.open_severities"),
        ({"retention_days": 90}, "sla.retention_days"),
        ({"retention_days": "400"}, "sla.retention_days"),
    ],
)
def test_bad_sla_policy_is_an_error_naming_the_key(override, key):
    with pytest.raises(_policy.PolicyError) as err:
        _policy.merge_policy(None, {"sla": override})
    assert key in str(err.value)
