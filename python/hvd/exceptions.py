"""Exceptions of the hvd package (the names horovod.common.exceptions has)."""


class HorovodInternalError(RuntimeError):
    """An hvd operation failed: a collective, its negotiation with the other
    ranks, or a call into libhvd. ``code`` is the HVD_ERR_* value libhvd
    returned (None when the error was found on the Python side)."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


class HostsUpdatedInterrupt(RuntimeError):
    """Raised by elastic jobs when the set of hosts changed (elastic is not
    implemented yet; the class exists so that Horovod code imports)."""

    def __init__(self, skip_sync=False):
        super().__init__()
        self.skip_sync = skip_sync
