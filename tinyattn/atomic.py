"""Writing a file so that no interruption leaves a half-written one: ``atomic_write``.

The data goes to a temporary file in the destination's folder, is flushed to disk, and is then
renamed over the destination (``os.replace`` is atomic). Ctrl-C, a crash or a full disk leave
the old file as it was. Only SIGKILL (or a power cut) can stop the process between creating
the temporary and renaming it; such leftovers are removed by the next write in that folder
(``remove_stale_temporaries``).

The temporaries are named ``.tmp-tinyattn-<host>-<pid>-<random><suffix>``, so a leftover is
recognised as tinyattn's own and provably abandoned when the process that made it (on this
machine) no longer runs; one older than a day is removed whoever made it. Other files that
merely start with ``.tmp-`` are never touched.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import socket
import stat
import tempfile
import time
from typing import IO, Any, Iterator, List

__all__ = ["atomic_write", "remove_stale_temporaries", "temp_prefix", "TEMP_PREFIX"]

TEMP_PREFIX = ".tmp-tinyattn-"
STALE_AFTER_S = 24 * 3600        # a temporary this old is abandoned, whoever made it
_TEMP_NAME = re.compile(re.escape(TEMP_PREFIX) + r"([0-9a-f]{8})-([0-9]+)-")


def _host_tag() -> str:
    """8 hex digits naming this machine, so a PID is only ever checked where it lives."""
    return hashlib.sha1(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def temp_prefix() -> str:
    """The start of this process's temporary names (see the module docstring)."""
    return f"{TEMP_PREFIX}{_host_tag()}-{os.getpid()}-"


def _process_is_running(pid: int) -> bool:
    if pid == os.getpid():
        return True               # one of our own threads may be writing it right now
    if os.name != "posix":
        return True               # no harmless way to ask; rely on the file's age
    try:
        os.kill(pid, 0)           # signal 0: only checks that the process exists
    except ProcessLookupError:
        return False
    except OSError:
        return True               # exists, but belongs to someone else
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    """A killed process its parent has not waited for yet: it runs no code (Linux)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def remove_stale_temporaries(folder: str) -> List[str]:
    """Delete tinyattn's abandoned temporaries in ``folder`` (see the module docstring);
    returns their paths. Never raises: a folder we cannot list or clean is left as it is."""
    removed = []
    host, now = _host_tag(), time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = _TEMP_NAME.match(entry.name)
        if match is None:
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            abandoned = match.group(1) == host and not _process_is_running(int(match.group(2)))
            if abandoned or now - entry.stat(follow_symlinks=False).st_mtime > STALE_AFTER_S:
                os.remove(entry.path)
                removed.append(entry.path)
        except OSError:
            continue
    return removed


def _umask() -> int:
    try:                          # Linux: read it without changing it (thread-safe)
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _mode_for(target: str) -> int:
    """The permissions the new file gets: the old file's (a 0600 checkpoint stays 0600), or,
    for a new file, the usual 0666 minus the umask (mkstemp itself makes 0600)."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _sync_folder(folder: str) -> None:
    """Flush the rename itself to disk (POSIX); best effort."""
    if os.name != "posix":
        return
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


@contextlib.contextmanager
def atomic_write(path: str, mode: str = "wb") -> Iterator[IO[Any]]:
    """Open a temporary file next to ``path`` for writing; when the block ends without an
    error, flush it to disk and rename it over ``path``. An interruption leaves the old file
    intact and no temporary. If ``path`` is a symbolic link, the file it points to is
    replaced and the link stays a link. An existing file keeps its permissions.
    Every file tinyattn writes (checkpoints, metrics, plots, reports) goes through here."""
    target = os.path.realpath(path)
    folder = os.path.dirname(target)
    remove_stale_temporaries(folder)
    handle, tmp_path = tempfile.mkstemp(prefix=temp_prefix(),
                                        suffix=os.path.splitext(target)[1], dir=folder)
    try:
        text = {} if "b" in mode else {"encoding": "utf-8"}     # text is always UTF-8
        with os.fdopen(handle, mode, **text) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp_path, _mode_for(target))
        os.replace(tmp_path, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp_path)
        raise
    _sync_folder(folder)
