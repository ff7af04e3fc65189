"""Filters on ibnetdiscover output: names mapped to module_utils/ibnetdiscover.py.

{{ ibnetdiscover_stdout | ibnetdiscover_leaf_of }}   {host: leaf switch}
"""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.filter_errors import filter_map
from ansible.module_utils.ibnetdiscover import IbnetdiscoverError, leaf_of_text


class FilterModule:
    def filters(self):
        return filter_map({"ibnetdiscover_leaf_of": leaf_of_text}, IbnetdiscoverError)
