"""Exceptions of the hvd package (the names horovod.common.exceptions has)."""

import re

# How the engine's no-progress verdict begins (runtime/engine/no_progress.cc),
# possibly after the name of the call that failed ("allreduce: ...").
_NO_PROGRESS = re.compile(r"(^|: )no progress for \d+ s on ")


class HorovodInternalError(RuntimeError):
    """An hvd operation failed: a collective, its negotiation with the other
    ranks, or a call into libhvd. ``code`` is the HVD_ERR_* value libhvd
    returned (None when the error was found on the Python side)."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code

    @property
    def no_progress(self):
        """True for the engine's no-progress verdict (docs/engine.md): the
        ranks waited for different tensors, so every pending op failed on
        every rank. A lost peer is not one."""
        return _NO_PROGRESS.search(str(self)) is not None


class HostsUpdatedInterrupt(RuntimeError):
    """Raised on every rank by State.commit() / check_host_updates() when the
    set of hosts changed (hvd.elastic; docs/elastic.md). ``skip_sync``: only
    hosts were removed, so the survivors' state needs no sync."""

    def __init__(self, skip_sync=False):
        super().__init__()
        self.skip_sync = skip_sync
