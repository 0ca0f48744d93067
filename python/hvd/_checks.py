"""Checks of the public API's arguments, raising what Horovod 0.28 raises
for the same mistake, before anything reaches libhvd:

    a call before init()                ValueError "Horovod has not been initialized;
                                        use hvd.init()." (a collective: HorovodInternalError,
                                        as Horovod's enqueue wraps it; hvd._collectives.enqueue)
    a tensor name that is not a str     TypeError (Horovod: AttributeError on .encode)
    a tensor name containing NUL        ValueError (libhvd takes C strings, which end at
                                        the NUL: "a\\0b" and "a\\0c" would be one tensor;
                                        Horovod has the same collision)
    a rank that is not an integer       TypeError (what ctypes / pybind11 raise in Horovod)
    a process set that is empty, has a  ValueError
    negative, repeated or too large rank
    an int passed as a handle           ValueError "Handle N was not created or has been
                                        cleared." (Horovod's handles are ints); any other
                                        non-handle is a TypeError. Horovod's synchronize()
                                        returns None for an unknown handle; hvd raises the
                                        same ValueError there: no hvd handle is an int.
"""

import operator

NOT_INITIALIZED = "Horovod has not been initialized; use hvd.init()."


def not_initialized(what):
    """The ValueError of a call made before init() (or after shutdown())."""
    return ValueError(f"{what}: {NOT_INITIALIZED}")


def tensor_name(name):
    """A tensor name as libhvd takes it: bytes, or None for an automatic
    name (None or "")."""
    if name is None:
        return None
    if not isinstance(name, str):
        raise TypeError(f"a tensor name must be a str, not {type(name).__name__} ({name!r})")
    if "\0" in name:
        raise ValueError(f"tensor name {name!r} contains a NUL character: names are passed "
                         "to libhvd as C strings, which end at the first NUL")
    return name.encode() if name else None


def member_name(name, i):
    """The name of the i-th tensor of a grouped op named ``name``."""
    tensor_name(name)
    return f"{name}.{i}" if name else None


def rank_value(value, what):
    """An integer rank (int, numpy or 0-d torch integer: anything with
    __index__); TypeError for floats, strings, None."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, not {type(value).__name__} "
                        f"({value!r})") from None


def rank_list(ranks):
    """The sorted global ranks of a ProcessSet: any collection of integers
    (as Horovod sorts it), none negative, none twice."""
    if isinstance(ranks, (str, bytes, dict)) or not hasattr(ranks, "__iter__"):
        raise TypeError(f"ProcessSet takes a sequence of global ranks, not "
                        f"{type(ranks).__name__} (MPI communicators need MPI, which hvd "
                        "does not use)")
    values = []
    for r in ranks:
        try:
            values.append(operator.index(r))
        except TypeError:
            raise TypeError(f"ProcessSet: ranks must be integers, not {type(r).__name__} "
                            f"({r!r})") from None
    values.sort()
    if values and values[0] < 0:
        raise ValueError(f"ProcessSet: rank {values[0]} is negative")
    if len(set(values)) != len(values):
        raise ValueError(f"ProcessSet: ranks {values} contain duplicates")
    return values


def registrable(ranks, world_size):
    """ValueError unless a set of these (checked, sorted) ranks can be
    registered in a job of ``world_size`` ranks."""
    if not ranks:
        raise ValueError("Cannot initialize an empty process set")
    if ranks[-1] >= world_size:
        raise ValueError(f"add_process_set: rank {ranks[-1]} is out of range: the job has "
                         f"ranks 0 to {world_size - 1}")


def not_a_handle(handle, what):
    """The error for ``what(handle)`` where handle is no Handle."""
    if isinstance(handle, int):
        return ValueError(f"Handle {handle} was not created or has been cleared. (hvd's "
                          f"handles are what the *_async calls return, not ints)")
    return TypeError(f"{what}() expects a handle returned by an *_async call, "
                     f"not {type(handle).__name__}")
