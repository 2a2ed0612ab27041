"""What `gpuops-runbook lookup` prints: the ansible-playbook command an operator can paste for a catalogue entry.

The playbook in its installed form (`gpuops.cluster.<name>`), the ticket as `gpuops_ticket`, and every other
variable in one JSON `-e` (shell-quoted), so free text such as `isolate_reason` keeps its spaces: Ansible splits a
`key=value` `-e` on spaces (`-e 'isolate_reason=Xid 79'` sets the reason to `Xid`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
from typing import Any, Dict, List, Optional, Sequence

#: Placeholders, shell-safe (no <, >, $): the operator replaces them before running.
INVENTORY = "INVENTORY"
NODE = "NODE"
TICKET = "TICKET"
CHANGE = "CHANGE"
#: The names the runbooks' own "Run" blocks use for the node, the ticket, the change and the inventory.
EXAMPLE_NODE, EXAMPLE_TICKET, EXAMPLE_CHANGE, EXAMPLE_INVENTORY = (
    "gpu-node-07",
    "OPS-1234",
    "CHG-5678",
    "inventories/prod",
)
#: The audit trail every disruptive playbook needs (docs/audit.md): without it they refuse before any change.
AUDIT_EXPORT = "export ANSIBLE_CALLBACKS_ENABLED=gpuops.cluster.audit GPUOPS_STATE_DIR=/var/lib/gpuops"
#: Where lookup's own commands end and the runbook's steps begin.
STEPS_MARK = "# every step of the runbook"


def playbook_name(entry: Dict[str, Any]) -> str:
    """`playbooks/isolate.yml` -> `gpuops.cluster.isolate`."""
    base = os.path.basename(entry["playbook"])
    return "gpuops.cluster." + (base[:-4] if base.endswith(".yml") else base)


def extra_vars(entry: Dict[str, Any], nodes: Sequence[str], ticket: str) -> Dict[str, Any]:
    """The playbook's variables for this ticket: the catalogue's ticket_vars (nodes, node, a non-ticket id such
    as the leak response's alert id) and extra_vars; `gpuops_targets` when the entry names no node variable."""
    nodes = list(nodes) or [NODE]
    out: Dict[str, Any] = {}
    roles = entry.get("ticket_vars") or {}
    for var, role in roles.items():
        if role == "nodes":
            out[var] = nodes
        elif role == "node":
            out[var] = nodes[0]
        elif role == "ticket" and not var.endswith("_ticket"):  # `<role>_ticket` aliases: gpuops_ticket instead
            out[var] = ticket
    if not any(role in ("nodes", "node") for role in roles.values()):
        out["gpuops_targets"] = ",".join(nodes)
    out.update(entry.get("extra_vars") or {})
    return out


def commands(
    entry: Dict[str, Any], nodes: Sequence[str] = (), ticket: str = TICKET, inventory: str = INVENTORY
) -> List[List[str]]:
    """argv of the commands to run: `--check` first for anything that changes nodes, then the real run."""
    argv = ["ansible-playbook", "-i", inventory, playbook_name(entry)]
    argv += ["-e", json.dumps(extra_vars(entry, nodes, ticket)), "-e", "gpuops_ticket=%s" % ticket]
    if entry.get("approval_required"):
        argv += ["-e", "gpuops_change_id=%s" % CHANGE]
    if entry.get("change_class") == "read_only":
        return [argv]
    return [argv + ["--check"], argv]


def render(
    entry: Dict[str, Any],
    nodes: Sequence[str] = (),
    ticket: Optional[str] = None,
    inventory: Optional[str] = None,
) -> str:
    """The lookup's text: what the entry is, then the commands, shell-quoted (paste as they are)."""
    lines = [
        "# %s: %s" % (entry["id"], entry["title"]),
        "# runbook: runbooks/%s   class: %s   approval: %s"
        % (entry["runbook"], entry["change_class"], "REQUIRED" if entry.get("approval_required") else "not required"),
    ]
    if entry.get("allowed_vars"):
        lines.append("# may also set: %s" % ", ".join(entry["allowed_vars"]))
    placeholders = [p for p, given in ((INVENTORY, inventory), (NODE, nodes), (TICKET, ticket)) if not given]
    if entry.get("approval_required"):
        placeholders.append(CHANGE + " (the approval's reference)")
    if placeholders:
        lines.append("# replace: %s" % ", ".join(placeholders))
    for argv in commands(entry, nodes, ticket or TICKET, inventory or INVENTORY):
        lines.append(" ".join(shlex.quote(a) for a in argv))
    return "\n".join(lines) + "\n"


def section(text: str, title: str) -> List[str]:
    """The lines of the Markdown section ``## title`` (up to the next ``## ``), without the heading."""
    lines = text.splitlines()
    try:
        start = lines.index("## " + title) + 1
    except ValueError:
        return []
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def run_steps(run_section: Sequence[str]) -> List[str]:
    """The lines of the first fenced block of the Run section: every step, in order."""
    fences = [i for i, line in enumerate(run_section) if line.startswith("```")]
    return list(run_section[fences[0] + 1 : fences[1]]) if len(fences) >= 2 else []


def _fill(line: str, nodes: Sequence[str], ticket: Optional[str], inventory: Optional[str]) -> str:
    if nodes:
        line = line.replace(json.dumps([EXAMPLE_NODE]), json.dumps(list(nodes)))
        line = re.sub(r"(?<![\w.-])%s(?![\w.-])" % re.escape(EXAMPLE_NODE), ",".join(nodes), line)
    line = line.replace(EXAMPLE_TICKET, ticket or TICKET).replace(EXAMPLE_CHANGE, CHANGE)
    return line.replace(EXAMPLE_INVENTORY, inventory or INVENTORY)


def procedure(
    runbook_text: str,
    entry: Dict[str, Any],
    nodes: Sequence[str] = (),
    ticket: Optional[str] = None,
    inventory: Optional[str] = None,
) -> str:
    """The whole procedure: the audit export, the runbook's preconditions, the catalogue's commands (check mode
    first) and every step of the runbook's Run section with the node, ticket and inventory filled in."""
    head = render(entry, nodes, ticket, inventory).splitlines()
    commands_at = next(i for i, line in enumerate(head) if not line.startswith("#"))
    page = "runbooks/%s" % entry["runbook"]
    out = head[:commands_at]
    out += ["# before you start (once per shell): the audit trail; without it the playbook refuses", AUDIT_EXPORT]
    pre = [line for line in section(runbook_text, "Preconditions") if line.strip()]
    out.append("# PRECONDITIONS (%s#preconditions): check every one before you run anything" % page)
    out += ["#   " + _fill(line, nodes, ticket, inventory) for line in pre] or ["#   (none listed)"]
    out.append("# the catalogue's command, check mode first:")
    out += head[commands_at:]
    steps = run_steps(section(runbook_text, "Run"))
    if steps:
        out.append("%s (%s#run), in order:" % (STEPS_MARK, page))
        out += [_fill(line, nodes, ticket, inventory) for line in steps]
    return "\n".join(out) + "\n"
