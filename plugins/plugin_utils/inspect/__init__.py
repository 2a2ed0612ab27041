# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inspection pipeline on the controller: plan, pool, facts cache, fleet baseline, cluster correlation, reports,
alert rules, slices, the live and shell capture parsed on the controller."""
