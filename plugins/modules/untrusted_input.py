# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/untrusted_input.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: untrusted_input
short_description: Take outside text (tickets, reasons, node lists) as inert data, or refuse it by name
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Reads the B(raw) values of the named variables (never rendering an outside value), validates each by its
    kind with full matches, and sets the fact O(fact) to a mapping of variable name to the value with template
    trust removed, so no later template renders it. Roles reference the copies, never the raw names.
  - >-
    First refuses the whole run when a named variable is an extra var (C(-e), C(-e @file)) holding a trusted
    string that looks like a template (an expression, a statement or a comment in Jinja delimiters, or a
    C(#jinja2:) header), at any depth; in ansible-core 2.19 such values would be rendered wherever they are
    referenced. With O(all_extra_vars=true) every extra var is checked. Values marked C(!unsafe) (as the ticket
    hook, the EDA rulebook and AWX surveys pass them) are data and pass, braces and all.
  - A named variable that is not an extra var and holds a template (a role default, a play or inventory
    variable written by the collection's author or operator) is rendered once; anything outside it references
    was checked first.
  - >-
    Refuses the run when the extra vars hold C(_raw_params) - a C(-e key=value) argument whose value Ansible
    cut at a space (C(-e 'isolate_reason=Xid 79') sets the reason to C(Xid) and leaves C(79) over) - and names
    the JSON form to use instead (C(-e '{"isolate_reason": "Xid 79"}')).
  - Run it on the controller as the first task of a playbook (before the roles, whose argument validation renders
    its variables) and again at the start of a role for variables passed to it.
options:
  text:
    description: Free text (reasons, notes). A string of at most 1024 characters, one line (tab allowed).
    type: list
    elements: str
    default: []
  ids:
    description: Ticket, change and alert ids. Full match of C([A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}).
    type: list
    elements: str
    default: []
  hosts:
    description: Lists of inventory host names (a list, or a string C("a,b") or one per line); each must be in the inventory.
    type: list
    elements: str
    default: []
  targets:
    description:
      - Targets from outside (C(gpuops_targets) given as an extra var by the ticket hook, the EDA rulebook, an AWX
        survey or C(-e)) - inventory host names only, C("a,b") or a list; each must be a host of the inventory (not
        the implicit localhost), not a group (C(all), C(gpu_nodes), any group) and hold no pattern character
        (C(*), C(:), C(!), C(&), C(,) inside a name, C([), C(~), C(@)). The fact holds them comma-joined.
      - A group or pattern passes only when the operator gives C(-e gpuops_allow_target_patterns=true) on the
        command line (the ticket hook refuses that variable in a payload; the rulebook and the surveys never set
        it), or when the variable is not an extra var (an inventory or play variable is the operator's).
    type: list
    elements: str
    default: []
  patterns:
    description:
      - Host patterns an operator gives; names, groups, C(,), C(:!), C(:&), C(*), ranges, no C(~) regex.
      - Not for outside input; use O(targets).
    type: list
    elements: str
    default: []
  required:
    description: Names (of the lists above) that must be set and non-empty.
    type: list
    elements: str
    default: []
  fact:
    description: The private fact (C(__name)) that receives the mapping of variable name to inert value.
    type: str
    required: true
  all_extra_vars:
    description:
      - Refuse the run when B(any) extra var holds a trusted template, not only the named ones.
      - Off by default so that an operator's own C(-e) template (for example windows read with a lookup) keeps
        working; the variables that carry outside text are the named ones.
    type: bool
    default: false
extends_documentation_fragment:
  - gpuops.cluster.common.ATTRIBUTES_INFO
notes:
  - Runs on the controller only; C(delegate_to) and the connection are ignored.
"""

EXAMPLES = r"""
- name: Take the outside inputs as data (first task of the playbook)
  gpuops.cluster.untrusted_input:
    text: [isolate_reason]
    ids: [isolate_ticket, gpuops_ticket, gpuops_change_id]
    hosts: [isolate_nodes]
    required: [isolate_nodes, isolate_ticket, isolate_reason]
    fact: __isolate_in

- name: Use the inert copies, never the raw names
  gpuops.cluster.slurm_node:
    name: "{{ item }}"
    state: drained
    reason: "{{ __isolate_in.isolate_reason }} [{{ __isolate_in.isolate_ticket }}]"
  loop: "{{ __isolate_in.isolate_nodes }}"
"""

RETURN = r"""
ansible_facts:
  description: The fact named by O(fact), mapping each set variable to its inert, validated value.
  returned: success
  type: dict
  sample: {"__isolate_in": {"isolate_reason": "Xid 79 {{ literal }}", "isolate_ticket": "OPS-1", "isolate_nodes": ["gpu-node-03"]}}
refused:
  description: Why the inputs were refused, one entry per variable (or the extra vars holding templates).
  returned: failure
  type: list
  elements: str
  sample: ["isolate_ticket 'T-1\\n' is not an id (letters, digits and _.@+-, at most 128)"]
"""
