"""Whole-file reads and writes for the modules that write files (slurm_config, report_files, settle_receipt)."""

import os
import tempfile


def read_or_none(path):
    """A file's bytes, or ``None`` where it does not exist (any other error is raised)."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def write_atomically(module, path, data, mode=None):
    """Write ``data`` to ``path`` through a temporary file in its directory and ``module.atomic_move``.

    A reader sees the old file or the new one, never half of one. ``atomic_move`` keeps an existing file's
    owner and mode (a new file gets 0666 less the umask), so ``mode``, where given, is set after the move.
    """
    fd, tmp = tempfile.mkstemp(prefix=".gpufleet-", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        module.atomic_move(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    if mode is not None:
        os.chmod(path, mode)
