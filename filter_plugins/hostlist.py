# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Jinja filters for Slurm hostlist expressions (ClusterShell NodeSet).

{{ groups['slurm_compute'] | hostlist_fold }}        -> gpu[01-04]
{{ 'gpu[01-04]' | hostlist_expand }}                  -> ['gpu01', ..., 'gpu04']
{{ 'gpu[01-04]' | hostlist_count }}                   -> 4
"""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.filter_errors import as_filter
from ansible.module_utils.hostlist import HostlistError, hostlist_count, hostlist_expand, hostlist_fold


def _wrap(func):
    return as_filter(func, HostlistError)


class FilterModule:
    """Hostlist filters."""

    def filters(self):
        return {
            "hostlist_fold": _wrap(hostlist_fold),
            "hostlist_expand": _wrap(hostlist_expand),
            "hostlist_count": _wrap(hostlist_count),
        }
