"""One wrapper for filter plugins: a domain error becomes an AnsibleFilterError (controller side only)."""

from __future__ import annotations

import functools

from ansible.errors import AnsibleFilterError


def as_filter(func, errors, prefix=True, name=None):
    """Wrap func so that any of `errors` is raised as AnsibleFilterError.

    prefix: start the message with the filter's name (off where the message already names the variable);
    name: the filter's name where it differs from the function's.
    """

    @functools.wraps(func)
    def _filter(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except errors as exc:
            raise AnsibleFilterError(f"{name or func.__name__}: {exc}" if prefix else str(exc)) from exc

    return _filter


def filter_map(table, errors, prefix=True):
    """``{filter name: function}`` with each function wrapped by as_filter under its filter name.

    The one adapter style of filter_plugins/: each file maps names to module_utils functions of one topic.
    """
    return {name: as_filter(func, errors, prefix=prefix, name=name) for name, func in table.items()}
