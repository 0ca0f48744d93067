"""horovod.common, served by hvd.common."""

import sys as _sys

import hvd.common as _impl
import hvd.exceptions as _exceptions
import hvd.process_sets as _process_sets
from hvd.common import *  # noqa: F401,F403

_sys.modules[__name__ + ".exceptions"] = _exceptions
_sys.modules[__name__ + ".process_sets"] = _process_sets
_sys.modules[__name__ + ".basics"] = _impl
import hvd.elastic as _elastic  # noqa: E402
_sys.modules[__name__ + ".elastic"] = _elastic
