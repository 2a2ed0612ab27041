# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: inspect_cluster
short_description: Evaluate an inspection on the controller and write its reports
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Runs on the controller (an action plugin; it never connects to the targets).
  - For each target it takes the facts that M(gpuops.cluster.collect_info) registered on a live host, or analyses
    the host's C(gpuops_capture_dir) in-process (offline evidence, no module is forked per host), applies the
    health policy (C(docs/checks.md)), correlates findings across racks, leaf switches and power domains, and
    writes C(report.json) (schema C(gpuops.report/v1)), C(report.md), C(report.html) and C(gpuops.prom).
  - A host that was unreachable, or whose collection never ran, gets a C(node.unreachable) finding.
  - A host whose evidence could not be read (a capture directory that does not exist, a collector that failed)
    is in status C(error) with a C(status_reason); the checks of the fact domains that could not be read do not
    fire, and no finding from them carries a disruptive action (C(docs/findings.md), "Unknown is not broken").
  - A C(gpuops_node_class) that names no hardware profile (C(gpuops_profiles) or the policy's C(profiles)) while
    profiles are defined fails the task before any host is read, naming the host, the class and the known classes.
    A host without a node class (or with one while no profile is defined anywhere) is inspected without profile
    checks, with a warning.
  - Host variables read per target - C(gpuops_capture_dir) and C(gpuops_previous_capture_dir) (an earlier capture
    of the node, read first as the previous reading for counter deltas; relative paths are relative to the
    inventory directory), C(gpuops_rack), C(gpuops_leaf_switch), C(gpuops_power_domain), C(gpuops_node_class) with
    C(gpuops_profiles) (or C(gpuops_profile)), C(gpuops_policy_overrides), C(gpuops_golden_baseline).
  - In check mode the reports are written but the state directory (previous counters, clear markers,
    escalation history) is neither read nor advanced.
options:
  targets:
    description:
      - Inventory hostnames to report on.
      - Missing or empty fails the task with a message naming O(target_pattern) and the inventory (the pattern
        matched no host).
    type: list
    elements: str
  target_pattern:
    description:
      - The host pattern the targets came from; used in the message when there is no target, and resolved with
        O(resolve_targets).
    type: str
    default: gpu_nodes
  resolve_targets:
    description:
      - Resolve O(target_pattern) against the play's inventory, with C(--limit) applied, in the inventory's order
        (what C(ansible_play_hosts_all) would be in a play over the pattern), instead of taking O(targets).
      - Lets the plan run in a play on localhost, so no task iterates over every target (docs/performance.md).
    type: bool
    default: false
  fail_on:
    description:
      - A severity (C(P0), C(P1), C(P2), C(P3)); the result's RV(fail_on) counts the findings, node and cluster, at
        or above it (the playbook fails the run when the count is not zero). Empty means off.
      - Any other value fails the task before anything is read.
    type: str
    default: ""
  fail_on_unknown:
    description:
      - With O(fail_on) set, the nodes that could not be judged (status C(error)) fail the run too when they are more
        than this - C(N%) of the inspected nodes, or C(N) nodes (C(0) - any node) - and always when every node is
        unjudged. C(off) - never. RV(fail_on) carries their count and whether it was exceeded.
      - Any other value fails the task before anything is read.
    type: str
    default: "10%"
  textfile_dir:
    description:
      - node_exporter's textfile collector directory. C(gpuops.prom) is also written there atomically, mode 0640
        (C(docs/metrics.md)); not in check mode. It must be an existing directory, else the task fails before
        anything is read.
    type: path
  report_dir:
    description: Where to write the reports. Defaults to C(./reports/<timestamp>).
    type: path
  state_dir:
    description:
      - The controller state directory (C(docs/state.md)). Without it, no counter deltas, clear rules or escalation
        history are available.
    type: path
  db_url:
    description:
      - The shared store, a PostgreSQL URL (C(docs/store.md)); without it the store is the SQLite file in
        O(state_dir).
      - When set, the host states (previous counters, clear markers, escalation history) are kept in that database
        instead of the files of O(state_dir), shared by several controllers or AWX execution nodes (C(docs/state.md)).
    type: str
  ledger:
    description:
      - Record the run in the service ledger (C(docs/service.md)) when O(state_dir) or O(db_url) is set, and put the
        open incidents' SLA clocks into the report (C(service.sla) findings, C(gpuops_incident_sla_*) metrics). Never
        in check mode. A store that cannot be used fails the run after the reports are written.
    type: bool
    default: true
  policy_overrides:
    description: Site policy overrides merged recursively over the defaults (C(docs/policy.md)).
    type: dict
    default: {}
  collect_var:
    description: Name of the variable the live hosts registered the M(gpuops.cluster.collect_info) result in.
    type: str
    default: __inspect_collect
  platform_var:
    description:
      - Name of the variable the platform hosts (C(gpuops_scheduler_host), C(gpuops_storage_probe_host)) registered
        the M(gpuops.cluster.platform_info) result in. Its cluster platform facts (scheduler, storage) join the
        evaluation; a platform host without that result gives platform facts carrying the error (the scheduler and
        storage checks are then unknown).
      - With a cluster capture directory (C(gpuops_cluster_capture_dir)) the platform facts are read from it instead.
    type: str
    default: __inspect_platform
  write_reports:
    description: Write the report files.
    type: bool
    default: true
  include_facts:
    description:
      - Write each node's whole facts beside the report, in C(facts.json.gz) (gzip of compact JSON, mode 0600),
        which C(report.json) names in C(facts_file) with its SHA-256 (issue 41; C(report.json) itself holds no
        facts). C(false) writes no facts file. The in-memory report (the ledger, O(write_profiles)) always has them.
    type: bool
    default: true
  report_templates:
    description:
      - A directory of site report templates; a C(report.md.j2) or C(report.html.j2) found there is used instead
        of the collection's default. HTML templates are autoescaped. The variables a template sees are described
        in the inspect role's README (C(roles/inspect/README.md), "Report templates").
      - C(report.json) and C(gpuops.prom) are interfaces and are not templated.
      - A directory that does not exist, or a template that does not render, fails the task before any report is
        written.
    type: path
  write_profiles:
    description:
      - Also write the zero-config fleet baseline as a C(gpuops_profiles) YAML block to this file (mode 0600); per
        class of nodes without a hardware profile (their C(gpuops_node_class), else their GPU model), what the
        majority has (GPU model and count, NVLinks per GPU, Active IB ports and their rate, driver), each value
        with the share of peers that agree as a comment. Review it, then commit it to group_vars and give the
        hosts their class, and the profile then replaces the inference.
      - Not written in check mode.
    type: path
  validate_only:
    description:
      - Only check the targets' node classes, the policy overrides, O(fail_on) and O(textfile_dir), and split the
        targets into live ones and ones with a capture directory (RV(live), RV(captured)), then return; no host is
        read and no report is written. The inspection playbook runs this before it collects anything.
    type: bool
    default: false
  slice:
    description:
      - A sliced inspection (C(docs/scale-out.md)); empty (the default) is an unsliced run.
      - C(mode=slice) - evaluate the targets (this slice's hosts, e.g. an AWX job slice) exactly as an unsliced run
        does and write their entries to the shared store in one transaction; no cluster findings, no reports, no
        RV(fail_on) gate, and RV(nodes) is empty (verdicts are final only after the merge's correlation). In check
        mode nothing is written.
      - C(mode=merge) - read every node of the run group from the store (refused, naming what is wrong, when a slice
        is missing, a host was written twice, or a target was inspected by no slice), then correlate across the
        whole cluster and write the reports exactly as an unsliced run of the same targets. The targets are not
        contacted (the plan returns no live host).
      - Keys - C(mode) (C(slice), C(merge) or empty), C(group) (the run group every slice and the merge share),
        C(slice) (this slice's name, its number or AWX job id; slice mode), C(count) (how many slices the run
        has), C(expect) (how many slices the merge needs; else C(count), else what the slices recorded),
        C(db_url) (the shared store, PostgreSQL across execution nodes; else the embedded store under
        O(state_dir)).
    type: dict
    default: {}
  plan_token:
    description:
      - The RV(plan_token) the plan (O(validate_only)) of the same run returned. The evaluation then takes the
        captured targets' variables and every target's profile as the plan read them, from the file the plan wrote
        under O(state_dir) (removed once read), and reads host variables only for the live targets and the
        platform hosts (C(docs/performance.md)).
      - Empty, or a plan file that is missing, not this run's (another token, other targets) or unreadable - every
        target's variables are read, as without it.
    type: str
    default: ""
extends_documentation_fragment:
  - gpuops.cluster.common.ATTRIBUTES_INFO
attributes:
  check_mode:
    details: Reports are written; the state directory is not used.
  platform:
    support: full
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
notes:
  - Use the playbook C(gpuops.cluster.inspect) rather than this module directly.
seealso:
  - module: gpuops.cluster.collect_info
"""

EXAMPLES = r"""
- name: Evaluate and report (after collect_info registered __inspect_collect on live hosts)
  gpuops.cluster.inspect_cluster:
    targets: "{{ groups['gpu_nodes'] }}"
    report_dir: /var/lib/gpuops/reports/latest
    state_dir: /var/lib/gpuops/state
  register: inspection
"""

RETURN = r"""
summary:
  description: Counts per status and severity, and the cluster findings.
  returned: unless validate_only
  type: dict
  sample: {"nodes": 64, "status": {"healthy": 58, "degraded": 2, "faulty": 4, "unreachable": 0, "error": 0},
           "severity": {"P0": 0, "P1": 4, "P2": 2, "P3": 1}, "cluster_findings": []}
nodes:
  description:
    - Per host - status (C(healthy), C(degraded), C(faulty), C(unreachable), C(error)), why (C(status_reason), null
      when healthy), worst severity and findings.
  returned: unless validate_only
  type: dict
  sample: {"gpu-node-07": {"status": "faulty", "status_reason": "1 P0/P1 finding(s): GPU 3 Xid 79", "severity": "P1",
                           "findings": [{"check": "gpu.xid", "action": "isolate"}]}}
without_class:
  description:
    - Targets without a hardware profile (no C(gpuops_node_class), or no profiles defined); compared with the
      majority of their class instead (zero-config fleet baseline, C(fleet_baseline) in report.json).
  returned: always
  type: list
  elements: str
  sample: ["gpu-node-99"]
profiles_written:
  description: Where the inferred profiles were written (O(write_profiles)) and the classes in them.
  returned: when write_profiles is set and not in check mode
  type: dict
  sample: {"path": "/tmp/profiles.yml", "classes": ["NVIDIA H100 80GB HBM3"]}
policy:
  description: Policy version and hash of the effective cluster policy.
  returned: unless validate_only
  type: dict
  sample: {"version": "2026.12.0", "hash": "3f1c..."}
generated_at:
  description: When the inspection was evaluated (UTC).
  returned: unless validate_only
  type: str
  sample: "2026-12-02T10:00:00Z"
report_dir:
  description: Absolute path of the report directory.
  returned: when write_reports and not validate_only
  type: str
  sample: /home/oncall/reports/20261202T100000Z
reports:
  description: Paths of the written reports; C(textfile) is the copy in O(textfile_dir).
  returned: unless validate_only
  type: dict
  sample: {"json": "reports/x/report.json", "facts": "reports/x/facts.json.gz", "markdown": "reports/x/report.md", "html": "reports/x/report.html",
           "prometheus": "reports/x/gpuops.prom", "textfile": "/var/lib/node_exporter/textfile/gpuops.prom"}
collected:
  description: The live targets and how their collection went (C(ok), C(unreachable), C(failed)).
  returned: unless validate_only
  type: dict
  sample: {"live": 8, "ok": 7, "unreachable": 1, "failed": 0}
fail_on:
  description:
    - With O(fail_on), the findings at or above it - the severity, their count and the count per severity -, the nodes
      that could not be judged against O(fail_on_unknown) (C(unknown)), C(failed) (the playbook fails the run) and
      C(msg) (its message); else null.
  returned: unless validate_only
  type: dict
  sample: {"severity": "P1", "count": 9, "by_severity": {"P0": 0, "P1": 9}, "failed": true,
           "unknown": {"nodes": 1, "total": 64, "threshold": "10%", "exceeded": false},
           "msg": "gpuops_fail_on=P1: P0 0, P1 9; 9 finding(s) at or above P1"}
targets:
  description: The targets checked.
  returned: when validate_only
  type: list
  elements: str
  sample: ["gpu-node-01", "gpu-node-02"]
live:
  description: The targets without a capture directory (collected over their connection).
  returned: when validate_only
  type: list
  elements: str
  sample: ["gpu-node-02"]
captured:
  description: The targets analysed from their C(gpuops_capture_dir).
  returned: when validate_only
  type: list
  elements: str
  sample: ["gpu-node-01"]
plan_token:
  description:
    - The handoff of this plan to the evaluation (O(plan_token)) - 32 hex digits, or empty when none was written (no
      O(state_dir), check mode, a sliced run, or variables that JSON would not give back as they are).
  returned: when validate_only
  type: str
  sample: 6f1c2d0e9a8b4c7d8e9f0a1b2c3d4e5f
slices:
  description:
    - Slice mode - the run group, the slice, how many hosts it wrote and whether it wrote them (not in check mode).
    - Merge mode - the run group, its hosts and each slice (name, hosts, when, where), and how many old run groups
      were pruned from the store (older than 7 days).
  returned: with O(slice)
  type: dict
  sample: {"group": "awx-4711", "hosts": 2000, "slices": [{"slice": "1", "host_count": 500, "controller": "exec-1"}]}
timing:
  description:
    - Seconds spent reading host variables, reading and parsing the evidence (C(read_s)), evaluating the nodes
      (C(evaluate_s)), correlating across the cluster (C(cluster_s)), writing the reports (C(reports_s)) and in total.
    - Captured nodes are read and evaluated on every CPU of the controller (C(GPUOPS_INSPECT_WORKERS) caps the worker
      processes); with a state directory an unchanged capture reuses its parsed facts from C(<state_dir>/cache/facts).
  returned: unless validate_only
  type: dict
  sample: {"hostvars_s": 0.4, "read_s": 5.1, "evaluate_s": 2.2, "cluster_s": 0.3, "reports_s": 1.1, "total_s": 9.8}
ledger:
  description:
    - What the run wrote into the service ledger (C(docs/service.md)).
  returned: when the run was recorded (ledger on, a state directory or database URL, not check mode)
  type: dict
  sample: {"run_id": "inspect-3f0c9a1b2c3d4e5f6a7b8c9d", "recorded": true, "findings_new": 2,
           "incidents_opened": ["INC-20261203-0001"], "incidents_restored": [], "audit_loaded": 0}
"""
