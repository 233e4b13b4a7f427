"""Is a run still running? Known from its folder alone, so a new kernel (``attach``) knows as much as
the one that launched the run.

- ``pid-supervisor.json``, ``pid-ranks.json`` (torchrun, or the one worker) and ``pid-writer.json``
  (the rank that writes the metrics) name the processes that run it (pid, create time, host). On that
  host a pid counts as alive only if its create time matches, because pids are reused, it runs as the user who
  owns the pid file, and its command line names the run folder the file was read from by any path to it (every
  run process gets the folder as an argument; the same device and inode, so a symlink, a bind mount or a
  container's volume match), so a copied or planted pid file never makes another program, or another user's
  pid file a program of yours, count as the run or receive its signals.
- ``heartbeat`` is touched every HEARTBEAT_S seconds by the supervisor and by the rank that writes the
  metrics. It is what a reader on another host (a shared folder) goes by, and what an error quotes.

A run without a final event is alive while any recorded process lives (or, where processes cannot be
checked, while the heartbeat is fresh); otherwise it ended without saying how, and ``reason`` says so.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .. import files
from . import layout, stall

HEARTBEAT_S = 2.0
STALE_S = 10.0  # five missed heartbeats
# The processes a run records (pid-<role>.json): the supervisor (a trainer run's; an edge run has none), the ranks
# it starts (torchrun or the one worker) and the writing rank (the one that writes the metrics stream)
SUPERVISOR, RANKS, WRITER = "supervisor", "ranks", "writer"
ROLES = (SUPERVISOR, RANKS, WRITER)
_DESCRIPTIONS = {SUPERVISOR: "the supervisor", RANKS: "the ranks", WRITER: "the writing rank"}


# -- writing ------------------------------------------------------------------------------------

def record_process(run_dir: Path, role: str, pid: int, serves_in_turn: bool = False) -> None:
    """Write pid-<role>.json atomically (launch and the supervisor may both record the supervisor).
    ``serves_in_turn``: a warm worker (warm.py) that trains several runs one after another; it counts as this
    run's process only until the run's final status is written."""
    import psutil

    try:
        created = psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        created = None
    entry = {"role": role, "pid": pid, "create_time": created, "host": socket.gethostname()}
    if serves_in_turn:
        entry["serves_in_turn"] = True
    path = layout.process_file(run_dir, role)
    files.write_atomic(path, json.dumps(entry))


def start_heartbeat(run_dir: Path, interval: float = HEARTBEAT_S) -> threading.Event:
    """Touch RUN_DIR/heartbeat every ``interval`` s from a daemon thread; set the returned event to stop.

    After creating the file here, the thread only updates its time: it never creates a file or a folder,
    so a deleted run folder stays deleted."""
    path = Path(run_dir) / layout.HEARTBEAT
    try:
        path.touch()
    except OSError:
        pass
    stop = threading.Event()

    def beat():
        while not stop.wait(interval):
            try:
                os.utime(path)
            except OSError:  # folder deleted or disk trouble: the readers will notice the silence
                pass

    threading.Thread(target=beat, name="ortnb-heartbeat", daemon=True).start()
    return stop


# -- reading ------------------------------------------------------------------------------------

def read_processes(run_dir: Path) -> dict[str, dict]:
    """The recorded processes, each with the folder it was read from as ``run_dir`` (where the file lies,
    not what it says: process_alive checks the process against it) and the file's owner as ``file_uid`` (a run's
    processes write their own pid files: one written by another user names none of them)."""
    found = {}
    for role in ROLES:
        path = layout.process_file(run_dir, role)
        entry = files.read_json_object(path)
        if entry is not None:
            try:
                owner = path.stat().st_uid
            except OSError:
                continue  # deleted since it was read
            found[role] = {**entry, "run_dir": str(run_dir), "file_uid": owner}
    return found


def foreign_owner(entry: dict, process_uid: int) -> str | None:
    """Why a recorded process is not the run's although its pid file names it: the file belongs to another
    user than the process (pure; None when they agree or the owner is unknown)."""
    owner = entry.get("file_uid")
    if owner is None or owner == process_uid:
        return None
    return (f"{layout.process_file(Path(entry.get('run_dir', '.')), entry.get('role', '?')).name} belongs to uid "
            f"{owner} but pid {entry.get('pid')} runs as uid {process_uid}: a pid file another user wrote is not "
            "followed, so that process is neither counted as the run nor signalled (delete the file if it is yours)")


def refusals(processes: dict[str, dict]) -> dict[str, str]:
    """role -> foreign_owner's reason, for each recorded process on this host whose pid file another user wrote."""
    import psutil

    found = {}
    for role, entry in processes.items():
        if entry.get("host") != socket.gethostname():
            continue
        try:
            why = foreign_owner(entry, psutil.Process(entry["pid"]).uids().real)
        except (psutil.NoSuchProcess, psutil.AccessDenied, KeyError, TypeError):
            continue
        if why:
            found[role] = why
    return found


def process_alive(entry: dict) -> bool | None:
    """True/False for a process recorded on this host; None where this host cannot tell (another host).
    An entry from read_processes counts only while its process is the run's (names its folder)."""
    import psutil

    if entry.get("host") != socket.gethostname():
        return None
    try:
        process = psutil.Process(entry["pid"])
        same = entry.get("create_time") is None or abs(process.create_time() - entry["create_time"]) < 1.0
        if not same or process.status() == psutil.STATUS_ZOMBIE:
            return False
        if "run_dir" not in entry:
            return True
        if foreign_owner(entry, process.uids().real):
            return False
        command_line, root = _command_line(process), f"/proc/{process.pid}/root"
        if entry.get("serves_in_turn"):  # a warm worker names the folder its runs lie in, and moves on
            return (names_folder(command_line, Path(entry["run_dir"]).parent, root)
                    and not run_ended(entry["run_dir"]))
        return names_folder(command_line, entry["run_dir"], root)
    except (psutil.NoSuchProcess, psutil.AccessDenied, KeyError, TypeError):
        return False


def _command_line(process, tries: int = 5, pause_s: float = 0.05) -> list[str]:
    """The process's command line. Linux shows an empty one for a moment while a process starts (seen right
    after Popen returned, on a loaded machine): read again briefly rather than call a starting run dead."""
    for _ in range(tries - 1):
        found = process.cmdline()
        if found:
            return found
        time.sleep(pause_s)
    return process.cmdline()


def run_ended(run_dir: str | Path) -> bool:
    """Whether the run's status.json holds its final status."""
    from . import status_file
    from .records import FINAL_EVENTS

    return (status_file.read(Path(run_dir)) or {}).get("status") in FINAL_EVENTS


def names_folder(command_line: list[str], run_dir: str | Path, root: str | Path = "/") -> bool:
    """Whether a command line has the run folder as an argument: the same text, or a path to the same folder
    (device and inode), so a folder attached through a symlink, a bind mount or a container's volume matches the
    path the process was started with. ``root``: the process's view of the file system (/proc/PID/root: a
    process in a container names paths inside it)."""
    wanted = folder_identity(run_dir)
    return any(arg == str(run_dir)
               or (wanted is not None and os.sep in arg and _identity_seen_from(root, arg) == wanted)
               for arg in command_line[1:])


def folder_identity(path: str | Path) -> tuple[int, int] | None:
    """(device, inode) of a folder: what every path to it shares; None if it is not one."""
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return None
    return (found.st_dev, found.st_ino) if stat.S_ISDIR(found.st_mode) else None


def _identity_seen_from(root: str | Path, path: str) -> tuple[int, int] | None:
    """folder_identity of ``path`` as a process whose root is ``root`` sees it; this process's view where
    that root cannot be read (another user's process)."""
    if str(root) != "/" and os.path.isabs(path):
        found = folder_identity(os.path.join(root, path.lstrip(os.sep)))
        if found is not None:
            return found
    return folder_identity(path)


def heartbeat_age(run_dir: Path, now: float | None = None) -> float | None:
    try:
        touched = (Path(run_dir) / layout.HEARTBEAT).stat().st_mtime
    except OSError:
        return None
    return max(0.0, (time.time() if now is None else now) - touched)


@dataclass
class Liveness:
    alive: bool
    reason: str | None = None  # why nothing runs any more, when nothing does


def check(run_dir: Path, processes: dict[str, dict], now: float | None = None) -> Liveness:
    """Whether anything still runs this run (see the module docstring)."""
    states = {role: process_alive(entry) for role, entry in processes.items()}
    if any(state is True for state in states.values()):
        return Liveness(True)
    age = heartbeat_age(run_dir, now)
    uncheckable = not states or any(state is None for state in states.values())
    if uncheckable and age is not None and age < STALE_S:
        return Liveness(True)
    return Liveness(False, explain(processes, states, age, refusals(processes)))


def explain(processes: dict[str, dict], states: dict[str, bool | None], age: float | None,
            refused: dict[str, str] | None = None) -> str:
    """Why a run without a final event counts as ended, and what to do (pure). ``refused``: role -> why its
    recorded process was not followed (refusals)."""
    heartbeat = "no heartbeat was ever written" if age is None else f"last heartbeat {age:.0f} s ago"
    if not processes:
        return (f"no process of this run is recorded (no pid-*.json) and {heartbeat}: it was started by an older "
                "ortnb, or its supervisor never began. See run.log in the run folder, and launch the run again.")
    refused = refused or {}
    ended = [f"{_DESCRIPTIONS.get(role, role)} (pid {entry.get('pid')})" for role, entry in processes.items()
             if states.get(role) is False and role not in refused]
    elsewhere = [f"{_DESCRIPTIONS.get(role, role)} (pid {entry.get('pid')} on {entry.get('host')})"
                 for role, entry in processes.items() if states.get(role) is None]
    parts = list(refused.values())
    if ended:
        parts.append(f"{' and '.join(ended)} ended without writing a final event")
    if elsewhere:
        parts.append(f"{' and '.join(elsewhere)} cannot be checked from this host and stopped beating")
    if RANKS not in processes and WRITER not in processes:
        parts.append("the ranks were never started")
    if refused and not ended and not elsewhere:
        return (f"{'; '.join(parts)}; {heartbeat}. No process this folder can vouch for runs the run: see run.log "
                "in the run folder, and find out who wrote those pid files.")
    return (f"{'; '.join(parts)}; {heartbeat}. Nothing runs this run any more (killed, out of memory, or the "
            "machine restarted): see run.log in the run folder, and launch the run again.")


def rank_processes(processes: dict[str, dict]) -> list:
    """The ranks' recorded process and its children on this host (torchrun's workers), while it is the run's;
    psutil.Process objects, [] where this host cannot tell."""
    import psutil

    entry = processes.get(RANKS)
    if not entry or process_alive(entry) is not True:
        return []
    try:
        top = psutil.Process(entry["pid"])
        return [top, *top.children(recursive=True)]
    except (psutil.NoSuchProcess, psutil.AccessDenied, KeyError, TypeError):
        return []


def frozen_ranks(processes: dict[str, dict]) -> tuple[str, ...]:
    """The run's processes on this host that are stopped (SIGSTOP, a debugger), as "rank 1 (pid 4242) is
    stopped": the ranks' process and its children (torchrun's workers name their RANK in their environment)."""
    import psutil

    family = rank_processes(processes)
    found = []
    for process in family:
        try:
            if process.status() not in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP):
                continue
            top = process is family[0] and len(family) > 1
            who = "torchrun" if top else f"rank {process.environ().get('RANK', '0')}"
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        found.append(f"{who} (pid {process.pid}) is stopped")
    return tuple(found)


def cpu_samples(pids: list[int]) -> dict[int, stall.CpuSample]:
    """pid -> its state and CPU time now, from /proc/PID/stat (processes that are gone are left out)."""
    found = {}
    for pid in pids:
        try:
            found[pid] = stall.parse_proc_stat(Path(f"/proc/{pid}/stat").read_text())
        except (OSError, ValueError, IndexError):
            pass
    return found


class CpuLooks:
    """Looks at the ranks' CPU time, so that a run past its stall bound is judged on what its ranks did since the
    previous look (stall.still_working). The first look, or one after MAX_AGE_S, waits stall.LOOK_S for a second."""

    MAX_AGE_S = 5.0

    def __init__(self):
        self._last: tuple[float, dict] | None = None  # (time.monotonic(), samples)

    def ranks_working(self, processes: dict[str, dict]) -> bool:
        family = rank_processes(processes)
        pids = [process.pid for process in (family[1:] or family)]  # torchrun's own polling is not the ranks' work
        if not pids:
            return False
        recent = self._last is not None and time.monotonic() - self._last[0] <= self.MAX_AGE_S
        before = self._last if recent else (time.monotonic(), cpu_samples(pids))
        pause = stall.LOOK_S - (time.monotonic() - before[0])
        if pause > 0:
            time.sleep(pause)
        self._last = (time.monotonic(), cpu_samples(pids))
        return stall.still_working(before[1], self._last[1], self._last[0] - before[0], os.sysconf("SC_CLK_TCK"))
