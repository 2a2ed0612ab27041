# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The machinery of every disruptive change: the blast-radius guard, maintenance windows, the change-window decision,
the rolling batch planner and the run outcome."""
