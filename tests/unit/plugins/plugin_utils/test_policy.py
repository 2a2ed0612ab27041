# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import copy

import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils import _timeutil
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy as P
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy_defaults as D


def test_defaults_validate_and_are_not_mutated():
    before = copy.deepcopy(P.DEFAULT_POLICY)
    merged = P.merge_policy(P.DEFAULT_POLICY, {})
    assert merged == before
    assert P.DEFAULT_POLICY == before
    assert merged["version"] == D.POLICY_VERSION


def test_override_one_threshold_keeps_all_others():
    merged = P.merge_policy(None, {"thresholds": {"temperature": {"memory_p2_c": 90}}})
    assert merged["thresholds"]["temperature"]["memory_p2_c"] == 90
    t_def = P.DEFAULT_POLICY["thresholds"]["temperature"]
    for key, value in t_def.items():
        if key != "memory_p2_c":
            assert merged["thresholds"]["temperature"][key] == value
    assert merged["thresholds"]["ecc"] == P.DEFAULT_POLICY["thresholds"]["ecc"]
    assert merged["response_times"] == P.DEFAULT_POLICY["response_times"]
    assert P.DEFAULT_POLICY["thresholds"]["temperature"]["memory_p2_c"] == 95


def test_nested_override_of_ib_counter_keeps_siblings():
    merged = P.merge_policy(None, {"thresholds": {"ib": {"counters": {"symbol_error": {"per_hour": 10}}}}})
    se = merged["thresholds"]["ib"]["counters"]["symbol_error"]
    assert se["per_hour"] == 10 and se["action"] == "reseat" and se["min_delta"] == 1
    assert "port_rcv_errors" in merged["thresholds"]["ib"]["counters"]


@pytest.mark.parametrize(
    "overrides, key",
    [
        ({"thresholds": {"temprature": {"gpu_fallback_p2_c": 80}}}, "thresholds.temprature"),
        ({"thresholds": {"temperature": {"memory_p2": 80}}}, "thresholds.temperature.memory_p2"),
        ({"respons_times": {"P0": "5m"}}, "respons_times"),
        ({"kernel_events": {"lookback": 3}}, "kernel_events.lookback"),
    ],
)
def test_typo_fails_naming_the_key(overrides, key):
    with pytest.raises(P.PolicyError) as exc:
        P.merge_policy(None, overrides)
    assert "'%s'" % key in str(exc.value)


def test_wrong_types_and_values_fail_naming_the_key():
    with pytest.raises(P.PolicyError, match="thresholds.temperature.memory_p2_c"):
        P.merge_policy(None, {"thresholds": {"temperature": {"memory_p2_c": "hot"}}})
    with pytest.raises(P.PolicyError, match="response_times.P1"):
        P.merge_policy(None, {"response_times": {"P1": "soon"}})
    with pytest.raises(P.PolicyError, match=r"xid.overrides.79.action"):
        P.merge_policy(None, {"xid": {"overrides": {"79": {"action": "panic"}}}})
    with pytest.raises(P.PolicyError, match=r"xid.overrides.79.sevrity"):
        P.merge_policy(None, {"xid": {"overrides": {"79": {"sevrity": "P1"}}}})
    with pytest.raises(P.PolicyError, match=r"clear_rules.checks.gpu.xid"):
        P.merge_policy(None, {"clear_rules": {"checks": {"gpu.xid": "never"}}})
    with pytest.raises(P.PolicyError, match=r"escalation.gpu.xid.13.steps"):
        P.merge_policy(None, {"escalation": {"gpu.xid": {"13": {"window_days": 7, "steps": []}}}})
    with pytest.raises(P.PolicyError, match="<root>"):
        P.merge_policy(None, ["not", "a", "dict"])


def test_open_maps_accept_site_keys():
    merged = P.merge_policy(
        None,
        {
            "xid": {"overrides": {"94": {"severity": "P2", "action": "monitor"}}},
            "escalation": {
                "gpu.xid": {"74": {"window_days": 14, "steps": [{"severity": "P1", "action": "reset_gpu"}]}}
            },
            "profiles": {"h100": {"gpu_count": 8, "gpu_model": "H100", "ib_ports": ["mlx5_0/1"], "nvswitch": True}},
        },
    )
    assert merged["xid"]["overrides"]["94"]["severity"] == "P2"
    assert "79" in merged["escalation"]["gpu.xid"]  # defaults kept next to the site's rule
    assert merged["escalation"]["gpu.xid"]["74"]["window_days"] == 14
    assert P.profile_for(merged, "h100")["gpu_count"] == 8
    assert P.profile_for(merged, None) is None
    with pytest.raises(P.PolicyError, match="profiles.nope"):
        P.profile_for(merged, "nope")


def test_profile_validation():
    P.validate_profile({"gpu_count": 8, "ib_ports": 4, "ib_rate_gbps": 400})
    with pytest.raises(P.PolicyError, match="gpu_cnt"):
        P.validate_profile({"gpu_cnt": 8})
    with pytest.raises(P.PolicyError, match="gpu_count"):
        P.validate_profile({"gpu_count": "8"})
    with pytest.raises(P.PolicyError, match="profiles.x.nvswitch"):
        P.merge_policy(None, {"profiles": {"x": {"nvswitch": "yes"}}})


def test_policy_hash_is_stable_and_changes_with_content():
    a = P.merge_policy()
    b = P.merge_policy(None, {})
    assert P.policy_hash(a) == P.policy_hash(b)
    assert P.policy_hash(a).startswith("sha256:") and len(P.policy_hash(a)) == 7 + 64
    c = P.merge_policy(None, {"kernel_events": {"lookback_hours": 3}})
    assert P.policy_hash(c) != P.policy_hash(a)
    # key order does not matter
    reordered = dict(reversed(list(a.items())))
    assert P.policy_hash(reordered) == P.policy_hash(a)


@pytest.mark.parametrize(
    "sev, now, want",
    [
        ("P0", "2026-12-02T10:00:00Z", "2026-12-02T10:15:00Z"),
        ("P1", "2026-12-02T10:00:00Z", "2026-12-02T10:30:00Z"),
        ("P2", "2026-12-02T23:00:00Z", "2026-12-03T01:00:00Z"),
        # P3: one business day; Wednesday -> Thursday, Friday -> Monday, Saturday -> Tuesday 00:00
        ("P3", "2026-12-02T10:00:00Z", "2026-12-03T10:00:00Z"),
        ("P3", "2026-12-04T16:00:00Z", "2026-12-07T16:00:00Z"),
        ("P3", "2026-12-05T09:00:00Z", "2026-12-08T00:00:00Z"),
    ],
)
def test_respond_by(sev, now, want):
    assert P.respond_by(sev, now, P.DEFAULT_POLICY) == want


def test_respond_by_reads_every_time_form_of_timeutil():
    # the policy has no time parser of its own: module_utils/_timeutil's parse_time/iso_z
    assert P.parse_time is _timeutil.parse_time and not hasattr(P, "iso")
    assert P.respond_by("P0", "2026-12-02T10:00:00+02:00", P.DEFAULT_POLICY) == "2026-12-02T08:15:00Z"
    assert P.respond_by("P0", "2024-11-15T12:02:03,470068+00:00", P.DEFAULT_POLICY) == "2024-11-15T12:17:03Z"
    assert P.respond_by("P0", 0, P.DEFAULT_POLICY) == "1970-01-01T00:15:00Z"
    for junk in ("garbage", None, True):
        assert P.respond_by("P0", junk, P.DEFAULT_POLICY) is None


_val = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5))
_keys = st.sampled_from(
    [
        "thresholds",
        "temperature",
        "ecc",
        "ib",
        "counters",
        "symbol_error",
        "per_hour",
        "xid",
        "overrides",
        "79",
        "escalation",
        "gpu.xid",
        "steps",
        "window_days",
        "severity",
        "action",
        "profiles",
        "h100",
        "gpu_count",
        "response_times",
        "P0",
        "correlation",
        "min_share",
        "clear_rules",
        "checks",
        "typo",
    ]
)


@settings(max_examples=80, deadline=None)
@seed(39)
@given(
    st.recursive(
        _val, lambda ch: st.one_of(st.lists(ch, max_size=3), st.dictionaries(_keys, ch, max_size=4)), max_leaves=20
    )
)
def test_fuzz_merge_policy_only_raises_policy_error(overrides):
    try:
        merged = P.merge_policy(None, overrides if isinstance(overrides, dict) else {"x": overrides})
    except P.PolicyError as exc:
        assert str(exc)
    else:
        assert P.policy_hash(merged).startswith("sha256:")


@pytest.mark.parametrize(
    "overrides, key",
    [
        ({"profiles": None}, "profiles"),
        ({"thresholds": {"bmc": {"sensor_type_status": {"fan": 3}}}}, "thresholds.bmc.sensor_type_status.fan"),
        ({"thresholds": {"pcie": {"replay_per_lane_per_minute": {"7": "x"}}}}, "replay_per_lane_per_minute.7"),
        ({"kernel_events": {"lookback_hours": 1e9}}, "kernel_events.lookback_hours"),
        ({"escalation": {"gpu.xid": {"79": {"window_days": -1}}}}, "escalation.gpu.xid.79.window_days"),
        # one case per validator (_validate_times/_tables/_xid/_escalation/_cluster)
        ({"response_times": {"P2": "soon"}}, "response_times.P2"),
        ({"thresholds": {"bmc": {"sensor_type_status": {"fan": {"ok": {"severity": "P4"}}}}}}, "fan.ok.severity"),
        ({"recovery_actions": {"reboot": {"action": "pray"}}}, "recovery_actions.reboot.action"),
        ({"collector_errors": {"default": {"severity": "P9"}}}, "collector_errors.default.severity"),
        ({"thresholds": {"bmc": {"coolant": {"Critical": {"action": "emergency_shutdown"}}}}}, "coolant.Critical"),
        ({"xid": {"overrides": {"abc": {"severity": "P1"}}}}, "xid.overrides.abc"),
        ({"xid": {"overrides": {"13": {"colour": "red"}}}}, "xid.overrides.13.colour"),
        ({"xid": {"user_caused_severity": "P4"}}, "xid.user_caused_severity"),
        ({"escalation": {"gpu.xid": "often"}}, "escalation.gpu.xid"),
        ({"correlation": {"domain_order": {"default": ["room"]}}}, "correlation.domain_order.default"),
        ({"correlation": {"min_share": 1.5}}, "correlation.min_share"),
        ({"cluster": {"faulty_share": 0}}, "cluster.faulty_share"),
    ],
)
def test_bad_values_in_open_maps_and_ranges_fail_naming_the_key(overrides, key):
    with pytest.raises(P.PolicyError) as exc:
        P.merge_policy(None, overrides)
    assert key in str(exc.value)


def test_severity_rank_is_the_one_scale():
    assert [P.severity_rank(s) for s in ("P0", "p1", " P2 ", "P3")] == [0, 1, 2, 3]
    assert P.severity_rank("P4") == P.severity_rank(None) == P.severity_rank("junk") == 9
    assert sorted(["P3", "P4", "P0", None, "P1"], key=P.severity_rank)[:3] == ["P0", "P1", "P3"]
