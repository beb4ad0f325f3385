"""zplan from Python: the same C library as the ``zplan`` command, called in this process.

    import zplan
    answer = zplan.whatif(model="llama-3-8b", gpus=8, cluster="dgx-h100")
    best = answer["plans"][0]                  # the JSON of `zplan ... --format json`, as a dict
    frame = zplan.plans(model="70B", gpus=64)  # the plans as a pandas DataFrame

Keyword options are the command line's options: ``gpus=8`` is ``--gpus 8``, ``global_batch=512`` is
``--global-batch 512``, ``pa=True`` is ``--pa``, ``pa=False`` is ``--no-pa``, a list or tuple is
joined with commas, and ``None`` leaves an option out. zplan parses them, with its own messages: nothing is
computed or checked here. A failure raises :class:`ZplanError` with zplan's message and exit status.
"""

import ctypes
import json
import os
import sys
from typing import NamedTuple

__all__ = ["ZplanError", "Result", "run", "whatif", "plans", "version"]


class ZplanError(Exception):
    """zplan refused or failed: ``message`` is what it wrote to standard error (its ``zplan: ...`` line),
    ``exit_code`` its exit status (1 run-time failure, 2 bad usage or input)."""

    def __init__(self, message, exit_code):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code

    def __str__(self):
        return f"{self.message} (exit status {self.exit_code})"


class Result(NamedTuple):
    """A command's exit status and what it wrote to standard output and standard error."""

    exit_code: int
    stdout: str
    stderr: str


def _load():
    path = os.environ.get("ZPLAN_LIBRARY") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "libzplan.so")
    lib = ctypes.CDLL(path)
    lib.zp_api_run.restype = ctypes.c_int
    lib.zp_api_run.argtypes = [
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_char_p),
        ctypes.POINTER(ctypes.c_void_p),
        ctypes.POINTER(ctypes.c_size_t),
        ctypes.POINTER(ctypes.c_void_p),
        ctypes.POINTER(ctypes.c_size_t),
    ]
    lib.zp_api_free.restype = None
    lib.zp_api_free.argtypes = [ctypes.c_void_p]
    lib.zp_api_version.restype = ctypes.c_char_p
    lib.zp_api_version.argtypes = []
    return lib


_lib = _load()


def version():
    """zplan's version, as ``zplan --version`` says it."""
    return _lib.zp_api_version().decode()


def _take(ptr, length):
    if not ptr.value:
        return ""
    try:
        return ctypes.string_at(ptr.value, length.value).decode("utf-8", errors="replace")
    finally:
        _lib.zp_api_free(ptr.value)


def run(*args):
    """Runs ``zplan ARGS`` in this process (the library, not the binary) and returns a :class:`Result`:
    the exit status and the text zplan wrote. ``zplan.run("models", "--format", "json")``."""
    argv = [b"zplan"] + [os.fsencode(str(a)) for a in args]
    arr = (ctypes.c_char_p * (len(argv) + 1))(*argv, None)
    out, err = ctypes.c_void_p(), ctypes.c_void_p()
    out_len, err_len = ctypes.c_size_t(), ctypes.c_size_t()
    # zplan writes to descriptors 1 and 2, collected for the call: what Python holds back goes out first
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, ValueError, OSError):
            pass
    rc = _lib.zp_api_run(len(argv), arr, ctypes.byref(out), ctypes.byref(out_len), ctypes.byref(err),
                         ctypes.byref(err_len))
    return Result(rc, _take(out, out_len), _take(err, err_len))


def _option_args(options):
    args = []
    for key, value in options.items():
        if value is None:
            continue
        name = key.replace("_", "-")
        if value is True:
            args.append(f"--{name}")
        elif value is False:
            args.append(f"--no-{name}")
        elif isinstance(value, (list, tuple)):
            args += [f"--{name}", ",".join(str(v) for v in value)]
        else:
            args += [f"--{name}", str(value)]
    return args


def _error(result):
    message = result.stderr.strip() or f"zplan exited with status {result.exit_code}"
    return ZplanError(message, result.exit_code)


def whatif(model=None, gpus=None, **options):
    """The what-if (``zplan --model M --gpus N [options] --format json``) as a dict: the JSON contract of
    the command line (``model``, ``cluster``, ``flop_convention``, ``plans``, ``best``). When no plan fits
    (the command's exit status 3) the dict is returned as well: its ``best`` is None, its ``plans`` hold
    the plans that were judged (each with ``fits`` false and its ``reason``) and ``near_miss`` says what
    would fit. Raises :class:`ZplanError` with zplan's message on a bad option (exit status 2) or a
    failure (1). What zplan writes to standard error beside an answer (warnings, files written) is
    passed on to ``sys.stderr``."""
    for own in ("format", "output", "o"):
        if own in options:
            raise TypeError(f"whatif() returns the answer as a dict: it takes no {own!r} option "
                            "(zplan.run() runs any command line)")
    result = run(*_option_args({"model": model, "gpus": gpus, **options}), "--format", "json")
    if result.exit_code not in (0, 3):
        raise _error(result)
    if result.stderr:
        sys.stderr.write(result.stderr)
    try:
        return json.loads(result.stdout)
    except ValueError:
        raise ZplanError(f"zplan's answer is not JSON: {result.stdout[:200]!r}", result.exit_code) from None


def plans(model=None, gpus=None, **options):
    """The plans of :func:`whatif` as a pandas DataFrame, a row a plan in zplan's order (the recommended
    one first), nested figures flattened by ``pandas.json_normalize`` (``memory_gb.total``,
    ``time_breakdown_s.compute``). Needs pandas; without it use ``whatif(...)["plans"]``."""
    try:
        import pandas
    except ImportError as e:
        raise ImportError("zplan.plans() needs pandas (pip install pandas); whatif(...)['plans'] is the "
                          "same data as a list of dicts") from e
    return pandas.json_normalize(whatif(model, gpus, **options)["plans"])
