"""One wrapper for filter plugins: a domain error becomes an AnsibleFilterError (controller side only)."""

from __future__ import annotations

import functools

from ansible.errors import AnsibleFilterError


def as_filter(func, errors, prefix=True):
    """Wrap func so that any of `errors` is raised as AnsibleFilterError.

    prefix: start the message with the function's name (off where the message already names the variable).
    """

    @functools.wraps(func)
    def _filter(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except errors as exc:
            raise AnsibleFilterError(f"{func.__name__}: {exc}" if prefix else str(exc)) from exc

    return _filter
