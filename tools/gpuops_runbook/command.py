"""What `gpuops-runbook lookup` prints: the ansible-playbook command an operator can paste for a catalogue entry.

The playbook in its installed form (`gpuops.cluster.<name>`), the ticket as `gpuops_ticket`, and every other
variable in one JSON `-e` (shell-quoted), so free text such as `isolate_reason` keeps its spaces: Ansible splits a
`key=value` `-e` on spaces (`-e 'isolate_reason=Xid 79'` sets the reason to `Xid`).
"""

from __future__ import annotations

import json
import os
import shlex
from typing import Any, Dict, List, Optional, Sequence

#: Placeholders, shell-safe (no <, >, $): the operator replaces them before running.
INVENTORY = "INVENTORY"
NODE = "NODE"
TICKET = "TICKET"
CHANGE = "CHANGE"


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
