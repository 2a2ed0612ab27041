# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""HostVarsOnce (plugin_utils/_action): each host's variables merged once by ansible-core, a group's table made
plain once, and the same values as ``hostvars`` gives: real InventoryManager/VariableManager/HostVars over a real
inventory with group_vars files, as inspect_cluster reads them."""

from __future__ import annotations

import textwrap

import pytest
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.vars.hostvars import HostVars
from ansible.vars.manager import VariableManager

from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import HostVarsOnce, host_var, plain


@pytest.fixture
def inventory(tmp_path):
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "hosts.yml").write_text(
        textwrap.dedent(
            """\
            all:
              children:
                gpu_nodes:
                  hosts:
                    n1: {gpuops_node_class: h100}
                    n2: {gpuops_node_class: h100}
                    n3:
                      gpuops_node_class: a100
                      gpuops_policy_overrides: {thresholds: {gpu_temp_c: 80}}
                    n4: {gpuops_node_class: h100, gpuops_golden_baseline: {}}
            """
        )
    )
    (tmp_path / "group_vars" / "gpu_nodes.yml").write_text(
        textwrap.dedent(
            """\
            gpuops_profiles:
              h100: {gpu_count: 8, mounts: [/home, /lustre]}
              a100: {gpu_count: 4, mounts: [/home]}
            gpuops_policy_overrides: {}
            gpuops_site_label: "{{ inventory_hostname }}-rack"
            gpuops_templated_table:
              owner: "{{ inventory_hostname }}"
            """
        )
    )
    loader = DataLoader()
    inv = InventoryManager(loader=loader, sources=[str(tmp_path / "hosts.yml")])
    manager = VariableManager(loader=loader, inventory=inv)
    return HostVars(inv, manager, loader), manager, ["n1", "n2", "n3", "n4"]


def test_same_values_as_hostvars(inventory):
    hostvars, _m, hosts = inventory
    once = HostVarsOnce(hostvars)
    for key in ("gpuops_profiles", "gpuops_policy_overrides", "gpuops_templated_table", "gpuops_node_class"):
        for host in hosts:
            want = plain(hostvars[host].get(key))
            assert host_var(once, host, key) == (want if want else None), (host, key)
            assert host_var(hostvars, host, key) == (want if want else None)  # the plain-dict path agrees


def test_each_host_merged_once_across_passes(inventory, monkeypatch):
    hostvars, manager, hosts = inventory
    calls = []
    real = manager.get_vars

    def counting(*args, **kwargs):
        calls.append(kwargs.get("host"))
        return real(*args, **kwargs)

    monkeypatch.setattr(manager, "get_vars", counting)
    once = HostVarsOnce(hostvars)
    for _pass in range(3):  # node classes, live/captured split, platform hosts
        for host in hosts:
            once[host].get("gpuops_node_class")
            host_var(once, host, "gpuops_profiles")
    assert len(calls) == len(hosts)
    # the plain HostVars merges on every access: the cost HostVarsOnce removes
    calls.clear()
    for _pass in range(3):
        for host in hosts:
            hostvars[host].get("gpuops_node_class")
    assert len(calls) == 3 * len(hosts)


def test_a_shared_table_is_made_plain_once_and_each_caller_gets_its_own_copy(inventory):
    hostvars, _m, hosts = inventory
    once = HostVarsOnce(hostvars)
    first = host_var(once, "n1", "gpuops_profiles")
    first["h100"]["gpu_count"] = 1  # a caller that edits what it got
    first["h100"]["mounts"].append("/scratch")
    second = host_var(once, "n2", "gpuops_profiles")
    assert second == {"h100": {"gpu_count": 8, "mounts": ["/home", "/lustre"]}, "a100": {"gpu_count": 4, "mounts": ["/home"]}}
    assert len(once._tables) == 1  # one group table, one conversion


def test_a_table_with_a_template_is_templated_per_host(inventory):
    hostvars, _m, hosts = inventory
    once = HostVarsOnce(hostvars)
    owners = [host_var(once, host, "gpuops_templated_table")["owner"] for host in hosts]
    assert owners == hosts  # never one host's rendering shared with another
    assert [once[h]["gpuops_site_label"] for h in hosts] == ["%s-rack" % h for h in hosts]


def test_unset_and_empty_give_the_default(inventory):
    hostvars, _m, _hosts = inventory
    once = HostVarsOnce(hostvars)
    assert host_var(once, "n1", "gpuops_golden_baseline") is None
    assert host_var(once, "n4", "gpuops_golden_baseline") is None  # {} is no baseline, as before
    assert host_var(once, "n1", "gpuops_policy_overrides", {}) == {}
    assert host_var(once, "n3", "gpuops_policy_overrides", {}) == {"thresholds": {"gpu_temp_c": 80}}
    assert "n1" in once and "nope" not in once
    assert once.get("nope") is None
    assert len(once) == len(hostvars)


@pytest.mark.parametrize(
    "value, free",
    [
        ({"a": [1, 2.5, None, True, "x"]}, True),
        ({"a": "{{ x }}"}, False),
        ({"{% if 1 %}k{% endif %}": 1}, False),
        (["ok", {"b": "{# c #}"}], False),
        ({"a": object()}, False),  # unknown types are never assumed template-free
    ],
)
def test_template_free(value, free):
    from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import _template_free

    assert _template_free(value) is free
