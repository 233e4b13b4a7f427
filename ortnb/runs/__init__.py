"""The run-folder protocol: what a run folder holds and how every process writes and reads it.

A run folder is shared by the processes of a run (the supervisor, the ranks, an edge worker) and the kernels that
watch it (``launch``, ``attach``, the Dashboard, the CLI). This package owns it, for every kind of run:

- ``layout``: the folder's files, config.json (its ``kind`` and settings; one atomic writer, one reader),
  checkpoints, best/ and model/;
- ``records``: the record types of the metrics stream (a step, an event, an evaluation), built in one place
  for every writer;
- ``stream_write`` and ``stream_read``: metrics.jsonl, the write side (one writer per folder, a line per
  record) and the read side (incremental, tolerant of a line cut short);
- ``status_file``: status.json, the final status, with room reserved so a full disk cannot take it;
- ``liveness``: which processes run a run (pid files, heartbeat) and whether any still does;
- ``stall``: when a run whose steps stopped advancing reads "stalled";
- ``control``: stopping a run (the STOP request the ranks read; the forced end when they do not answer);
- ``recorder``: the writing process's side (pid file, heartbeat, stream, its failure put where readers look),
  with ``full_disk`` naming a full disk as one;
- ``summary``: ``RunSummary``, what ``Run.summary()`` returns, declared key by key;
- ``start``: the one way a run's process is started (log, session, pid file, reaper);
- ``run``: ``Run``, a run as its folder shows it (status, metrics, stall, the weights it keeps, stop, wait).

It sits below ``runner/`` (launching and supervising trainer runs), ``edge/`` and ``ui/``, and imports none of them
nor ``tuning/`` or ``profiling/`` (tests/runs/test_runs_layer.py): a kind of run plugs in through the ``kind`` that
config.json names (an edge run is ``edge.run.EdgeRun``, a Run with the same types whose weights are ONNX Runtime
checkpoints). ``ortnb.attach`` (attach_run.py, above the kinds) opens a folder of any kind.
"""

from .layout import CONFIG, EDGE, KINDS, TRAINER, read_config, write_config

__all__ = ["CONFIG", "EDGE", "KINDS", "TRAINER", "read_config", "write_config"]
