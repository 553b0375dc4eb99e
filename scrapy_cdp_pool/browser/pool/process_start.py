"""When a process started, as a mark that tells it from a later process given
the same PID: what the sweep of killed crawls' directories compares before it
judges a recorded process alive or ends it.

On Linux the mark is exact and unaffected by clock changes: the boot's id
(``/proc/sys/kernel/random/boot_id``) and the process's start in clock ticks
since boot (``/proc/<pid>/stat`` field 22, proc(5)). psutil's
``create_time`` adds those ticks to ``btime`` from ``/proc/stat``, a whole
second that moves when the clock is stepped or slewed (psutil's docs: "may be
affected by ... NTP"): a process's creation time read twice a few minutes apart
differed by a second on a CI machine, so a recorded server was not recognised
and ran on. Elsewhere the mark is ``create_time`` in seconds since the epoch,
compared within :data:`WALL_CLOCK_TOLERANCE_S`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import psutil

#: how far apart two wall-clock start times of one process may be read
#: (seconds), where no exact mark is available: more than the whole second
#: ``btime`` moves by (on Linux psutil adds it, read anew each call, to the
#: start in ticks: the same process read 1.0 s apart within one test in CI,
#: which a 1 s tolerance refused, and its orphan ran on)
WALL_CLOCK_TOLERANCE_S = 2.0

#: ``/proc/<pid>/stat``'s start time (field 22) counted among the fields after
#: the command name's closing parenthesis, which start at field 3
_STARTTIME_AFTER_COMM = 22 - 3


def _linux_mark(pid: int) -> str | None:
    try:
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        # the command name (field 2) may hold spaces and parentheses
        ticks = int(stat[stat.rindex(b")") + 1 :].split()[_STARTTIME_AFTER_COMM])
    except (OSError, ValueError, IndexError):
        return None
    return f"{boot_id}:{ticks}"


def start_mark(pid: int) -> str | float | None:
    """The start mark of process ``pid``: ``"<boot id>:<ticks since boot>"``
    on Linux, else its creation time in seconds since the epoch; ``None`` when
    no such process can be read."""
    if sys.platform.startswith("linux"):
        mark = _linux_mark(pid)
        if mark is not None:
            return mark
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.Error, OSError):
        return None


def same_start(recorded: object, now: str | float | None) -> bool:
    """Whether a recorded mark (read back from JSON) and one read now name the
    same process: equal exact marks, or wall-clock times within
    :data:`WALL_CLOCK_TOLERANCE_S`. Marks of different kinds (a record written
    by another platform or version) are not the same."""
    if isinstance(recorded, str) or isinstance(now, str):
        return recorded == now
    if isinstance(recorded, (int, float)) and isinstance(now, float):
        return abs(now - float(recorded)) < WALL_CLOCK_TOLERANCE_S
    return False
