# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # Options shared by every fact collector: read live, or read a capture directory instead.
    DOCUMENTATION = r"""
options:
  capture_dir:
    description:
      - Read the saved tool outputs in this capture directory instead of running the tools.
      - The directory format is described in the collection's C(docs/capture.md).
      - When set, nothing is executed on the node; missing files are not errors.
    type: path
  timeout:
    description:
      - Seconds each external tool (or NVML call) may run before it is killed and abandoned.
      - A timed-out tool is reported in C(errors) with kind C(timeout); the module still returns.
    type: float
    default: 30
"""

    # Attributes of read-only *_info modules.
    ATTRIBUTES_INFO = r"""
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: The module only reads; it runs the same way in check mode.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  platform:
    description: Target OS/families that can be operated against.
    support: N/A
    platforms: posix
"""

    # Attributes of modules that change state.
    ATTRIBUTES_ACTION = r"""
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
  platform:
    description: Target OS/families that can be operated against.
    support: N/A
    platforms: posix
"""

    # The action attribute of controller steps (a documentation stub whose work runs in an action plugin), next to
    # attributes_info or attributes_action: extends_documentation_fragment: [gpuops.cluster.common.attributes_info,
    # gpuops.cluster.common.attributes_controller]. A module adds its own words with attributes: {check_mode: {details}}.
    ATTRIBUTES_CONTROLLER = r"""
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
"""
