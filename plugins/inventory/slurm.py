# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inventory plugin gpuops.cluster.slurm: the inventory from ``scontrol show node`` (docs/inventory-plugin.md)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm
short_description: Inventory of GPU nodes from Slurm (scontrol show node, and Slurm's topology)
version_added: 0.1.0
description:
  - Builds the inventory from the Slurm controller's node list, read live with C(scontrol show node) (text, or
    C(--json)) through the Slurm client on the controller, or from a captured output file (text or JSON), so it
    works offline.
  - Each host gets C(gpuops_slurm_node_name) (the Slurm NodeName every Slurm call of the collection uses),
    C(ansible_host) from NodeAddr, C(gpuops_node_class) from the O(node_classes) rules,
    C(gpuops_leaf_switch) and C(gpuops_rack) from Slurm's topology, and its partitions, state, features and GRES.
  - Groups by partition, state (base state and each flag), feature, GRES name and GRES type and node class, with
    sanitised names (lower case, other characters as C(_)); hosts with a C(gpu) GRES also join O(gpu_group).
  - Slurm's answers are data. A node whose name is not a plain host name is left out with a warning. An
    unreadable or unparsable source is a clear parser error.
  - Source files must be named C(*.slurm.yml) or C(*.slurm.yaml).
author: gpuops.cluster contributors (@gpuops)
extends_documentation_fragment:
  - ansible.builtin.constructed
  - ansible.builtin.inventory_cache
options:
  plugin:
    description: The name of this plugin.
    required: true
    type: str
    choices: [gpuops.cluster.slurm]
  scontrol_show_node_file:
    description:
      - A captured C(scontrol show node) output (text, or C(--json)) read instead of asking Slurm.
      - A relative path is relative to the source file.
    type: str
  scontrol_path:
    description: The Slurm client run on the controller when O(scontrol_show_node_file) is not set.
    type: str
    default: scontrol
  scontrol_json:
    description: Ask C(scontrol show node --json) (Slurm 23.02+ builds with the JSON data parser) instead of the text form.
    type: bool
    default: false
  scontrol_timeout:
    description: Seconds each live C(scontrol) call may take.
    type: float
    default: 30
  topology:
    description:
      - Where C(gpuops_leaf_switch) and C(gpuops_rack) come from.
      - V(auto) reads O(topology_file) when set, else C(scontrol show topology) when the nodes are read live
        (no topology plugin in Slurm means no placement); V(none) sets neither.
    type: str
    choices: [auto, none]
    default: auto
  topology_file:
    description:
      - A topology.conf file, or a captured C(scontrol show topology) output (C(SwitchName=) tree records or
        C(BlockName=) block records). A relative path is relative to the source file.
    type: str
  rack_from_leaf:
    description:
      - Set C(gpuops_rack) to the leaf switch's name (one leaf switch per rack). A C(BlockName=) block is the
        rack whatever this says; compose C(gpuops_rack) from a CSV or NetBox when racks differ.
    type: bool
    default: true
  hostname_from:
    description: The inventory name, V(name) the Slurm NodeName or V(hostname) its NodeHostName.
    type: str
    choices: [name, hostname]
    default: name
  hostname_suffix:
    description: Appended to each inventory name (C(.cluster.example.org)); C(gpuops_slurm_node_name) stays the Slurm name.
    type: str
    default: ""
  address_from:
    description: C(ansible_host) from V(address) (NodeAddr), V(hostname) (NodeHostName), or V(none).
    type: str
    choices: [address, hostname, none]
    default: address
  partitions:
    description: Only nodes in one of these partitions (all nodes when empty).
    type: list
    elements: str
    default: []
  group_prefix:
    description: Prefix of the generated group names (C(slurm_partition_gpu), C(slurm_state_drain), ...).
    type: str
    default: slurm_
  gpu_group:
    description: The group of hosts with a C(gpu) GRES (the collection's playbooks target C(gpu_nodes)); empty for none.
    type: str
    default: gpu_nodes
  node_classes:
    description:
      - Rules for C(gpuops_node_class), first match wins. Each rule has C(class) and one or more of C(gres)
        (C(gpu), C(gpu:h100), C(gpu:h100:8), C(gpu:8) for an untyped count), C(feature) and C(partition); a rule
        matches when all it names match.
    type: list
    elements: dict
    default: []
"""

EXAMPLES = r"""
# inventories/prod/cluster.slurm.yml, live on a Slurm client:
plugin: gpuops.cluster.slurm
topology: auto
node_classes:
  - {class: h100-sxm-8, gres: "gpu:h100:8"}
  - {class: a100-sxm-8, gres: "gpu:a100:8"}
compose:
  gpuops_power_domain: "'pdu-' ~ gpuops_rack"
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: ~/.cache/gpuops-inventory
cache_timeout: 600

---
# offline, from a capture:
plugin: gpuops.cluster.slurm
scontrol_show_node_file: captures/cluster/scontrol-show-node.txt
topology_file: /etc/slurm/topology.conf
"""

import os

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inventory import slurm_nodes, topology

MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_WARNINGS = 10


def _read(path):
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise AnsibleParserError("gpuops.cluster.slurm: cannot read %s: %s" % (path, exc.strerror or exc))
    if len(data) > MAX_FILE_BYTES:
        raise AnsibleParserError("gpuops.cluster.slurm: %s is larger than %d bytes" % (path, MAX_FILE_BYTES))
    return data.decode("utf-8", "replace")


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "gpuops.cluster.slurm"

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith((".slurm.yml", ".slurm.yaml"))

    def _path(self, value, source):
        value = os.path.expanduser(value)
        return value if os.path.isabs(value) else os.path.join(os.path.dirname(os.path.abspath(source)), value)

    def _scontrol(self, *args):
        argv = [self.get_option("scontrol_path")] + list(args)
        res = run_command(argv, timeout=float(self.get_option("scontrol_timeout")), env={"LC_ALL": "C"})
        return res

    def _fetch(self, source):
        """The parsed nodes and placement (plain data: what the cache keeps)."""
        node_file = self.get_option("scontrol_show_node_file")
        if node_file:
            where = self._path(node_file, source)
            text = _read(where)
        else:
            res = self._scontrol("show", "node", *(["--json"] if self.get_option("scontrol_json") else []))
            if not res.ok:
                raise AnsibleParserError("gpuops.cluster.slurm: %s" % res.describe())
            where, text = " ".join(res.argv), res.stdout
        try:
            nodes, warnings = slurm_nodes.load_nodes(text, where)
        except ParseError as exc:
            raise AnsibleParserError("gpuops.cluster.slurm: %s" % exc)
        places, topo_file = {}, self.get_option("topology_file")
        if self.get_option("topology") == "auto":
            topo_text, topo_where = None, None
            if topo_file:
                topo_where = self._path(topo_file, source)
                topo_text = _read(topo_where)
            elif not node_file:
                res = self._scontrol("show", "topology")
                topo_where = " ".join(res.argv)
                topo_text = res.stdout if res.ok else ""  # no topology plugin: no placement
            if topo_text:
                try:
                    places = topology.placement(topology.parse_topology(topo_text, topo_where))
                except ParseError as exc:
                    raise AnsibleParserError("gpuops.cluster.slurm: %s" % exc)
        return {"nodes": nodes, "places": places, "warnings": warnings}

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        cache_key = self.get_cache_key(path)
        use_cache = self.get_option("cache") and cache
        update_cache = self.get_option("cache") and not cache
        data = None
        if use_cache:
            try:
                data = self._cache[cache_key]
            except KeyError:
                update_cache = True
        if data is None:
            data = self._fetch(path)
        if update_cache:
            self._cache[cache_key] = data
        self._populate(data)

    def _populate(self, data):
        wanted = set(self.get_option("partitions") or [])
        nodes = [n for n in data["nodes"] if not wanted or wanted & set(n.get("partitions") or [])]
        built = slurm_nodes.build(
            nodes,
            data.get("places") or {},
            {
                "hostname_from": self.get_option("hostname_from"),
                "hostname_suffix": self.get_option("hostname_suffix"),
                "address_from": self.get_option("address_from"),
                "group_prefix": self.get_option("group_prefix"),
                "gpu_group": self.get_option("gpu_group"),
                "node_classes": self.get_option("node_classes"),
                "rack_from_leaf": self.get_option("rack_from_leaf"),
            },
        )
        warnings = list(data.get("warnings") or []) + built["warnings"]
        for msg in warnings[:MAX_WARNINGS]:
            self.display.warning("gpuops.cluster.slurm: %s" % msg)
        if len(warnings) > MAX_WARNINGS:
            self.display.warning("gpuops.cluster.slurm: %d more warnings" % (len(warnings) - MAX_WARNINGS))
        strict = self.get_option("strict")
        for group in sorted(built["groups"]):
            self.inventory.add_group(group)
        for host, hostvars in built["hosts"].items():
            self.inventory.add_host(host)
            for key, value in hostvars.items():
                self.inventory.set_variable(host, key, value)
        for group, members in built["groups"].items():
            for host in members:
                self.inventory.add_child(group, host)
        for host in built["hosts"]:
            # the user's compose / groups / keyed_groups (with strict: true a bad expression fails, naming it)
            hv = self.inventory.get_host(host).get_vars()
            self._set_composite_vars(self.get_option("compose"), hv, host, strict=strict)
            hv = self.inventory.get_host(host).get_vars()
            self._add_host_to_composed_groups(self.get_option("groups"), hv, host, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), hv, host, strict=strict)
