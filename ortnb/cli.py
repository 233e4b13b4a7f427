"""The ``ortnb`` command: ``ortnb setup`` builds what the ORT backend needs, ``ortnb info`` says what works here."""

from __future__ import annotations

import argparse
import json
import sys

from . import _imports

# How long compare and tune wait, before measuring, for other processes to leave the CPU: on 2 cores one busy
# process slows eager PyTorch up to 10x, so a figure measured beside it says little about the configuration.
QUIET_WAIT_S = 60.0


def cmd_setup(options: argparse.Namespace) -> int:
    """Build ORTModule's C++ extension for the installed torch and check that ORTModule imports; fetch ONNX
    Runtime Web's training build for `ortnb edge web`."""
    from .backends import ort_compat, ort_extensions

    web = _fetch_web_runtime(options.force)
    if options.web:
        return web
    try:
        _imports.require_ort_training("ortnb setup")
    except ImportError as error:
        print(f"ortnb setup: {error}", file=sys.stderr)
        return 1
    path = ort_extensions.build_extension(force=options.force) if options.force else ort_extensions.ensure_extension()
    print(f"ortnb setup: extension ready at {path}")
    ort_compat.load_ortmodule()
    print(f"ortnb setup: ORTModule imports; fixes applied for this torch: {', '.join(ort_compat.applied_fixes())}")
    return 0


def _fetch_web_runtime(force: bool) -> int:
    """ONNX Runtime Web's files from the npm registry (pinned, integrity-checked) into ortnb's cache."""
    from .edge import web_runtime

    note = None if force else web_runtime.refetch_note()  # a cached file changed since: say so, then replace it
    if note:
        print(f"ortnb setup: {note}")
    try:
        where = web_runtime.fetch(force=force)
    except (OSError, ValueError) as error:  # offline, a proxy, a cut-short download
        print(f"ortnb setup: could not fetch onnxruntime-web {web_runtime.VERSION} from the npm registry ({error}); "
              f"everything else works, and `ortnb edge web` will ask for `{web_runtime.FETCH_COMMAND}` again",
              file=sys.stderr)
        return 1
    print(f"ortnb setup: onnxruntime-web {web_runtime.VERSION} (training build) in {where}")
    return 0


def cmd_info(options: argparse.Namespace) -> int:
    """Versions and what this machine can run (engines, precisions, DeepSpeed, Chromium, ONNX Runtime Web)."""
    from . import info

    found = info.facts()
    print(json.dumps(found, indent=2) if options.json else "\n".join(info.lines(found)))
    return 0


def cmd_run(options: argparse.Namespace) -> int:
    """Start a run from a RunConfig JSON or YAML file and follow it; Ctrl-C stops it with a checkpoint."""
    from .errors import ConfigError
    from .runner import launch
    from .terminal import follow, print_record

    try:
        run = launch(load_config(options.config), launcher_args=options.launcher_args or None)
    except ConfigError as error:
        print(f"ortnb run: {error}", file=sys.stderr)
        return 2
    print(f"ortnb run: {run.config.label} in {run.run_dir}")
    stepped = False

    def show(record: dict) -> None:
        nonlocal stepped
        if record.get("event") == "phase" and not stepped:  # name what happens before the first step
            print(f"ortnb run: {record.get('phase')}...", flush=True)
        elif record.get("kind") == "step":
            stepped = True
            print_record(record)

    signalled = follow(run, "run", show)
    print(f"ortnb run: {run.status}; engine {run.summary()['engine']}")
    if run.bad_lines:
        print(f"ortnb run: {run.bad_lines} malformed line(s) in {run.run_dir / 'metrics.jsonl'} were skipped "
              "(a full disk or a killed writer leaves one)", file=sys.stderr)
    if run.status == "failed":
        print(run.error, file=sys.stderr)
    if signalled is not None:
        return signalled  # as a shell reports a command a signal ended: 128 + its number
    from .runs.records import COMPLETED, STOPPED

    return 0 if run.status in (COMPLETED, STOPPED) else 1  # a stopped run ended as asked


def read_config_file(path: str):
    """The data in a JSON or YAML (.yaml/.yml) file; ConfigError, one line naming the file, if it cannot be read."""
    from .errors import ConfigError

    text = _read_text(path)
    if path.endswith((".yaml", ".yml")):
        data = _parse_yaml(text, path)
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ConfigError(f"{path} line {error.lineno} column {error.colno}: not valid JSON ({error.msg}); "
                              "fix the file.") from None
    if data is None:
        raise ConfigError(f"{path} holds nothing; write RunConfig fields in it, e.g. model: minilm.")
    return data


def _read_text(path: str) -> str:
    from pathlib import Path

    from .errors import ConfigError

    file = Path(path)
    if file.is_dir():
        raise ConfigError(f"{path} is a folder; pass a JSON or YAML configuration file.")
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file.") from None
    except OSError as error:
        raise ConfigError(f"{path} cannot be read ({error.strerror}).") from None
    if not raw.strip():
        raise ConfigError(f"{path} is empty; write RunConfig fields in it, e.g. {{\"model\": \"minilm\"}}.")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path} is not UTF-8 text (byte {error.start}); save it as UTF-8.") from None


def _parse_yaml(text: str, path: str):
    from .errors import ConfigError

    try:
        import yaml
    except ImportError:
        raise ConfigError(f"reading {path} needs PyYAML: pip install pyyaml (or write the file as JSON).") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" line {mark.line + 1} column {mark.column + 1}" if mark else ""
        reason = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ConfigError(f"{path}{where}: not valid YAML ({reason}); fix the file.") from None
    # YAML 1.1 reads a bare `no` as false: `precision: no` means the RunConfig value "no", not a boolean.
    for item in data if isinstance(data, list) else [data]:
        if isinstance(item, dict) and item.get("precision") is False:
            item["precision"] = "no"
    return data


def load_config(path: str):
    """One RunConfig from a JSON or YAML file holding a mapping of field: value (``ortnb run``)."""
    from .config import RunConfig, value_kind
    from .errors import ConfigError

    data = read_config_file(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path} holds a {value_kind(data)}, but `ortnb run` takes one RunConfig: a mapping of "
                          "field: value (to run several configurations, use `ortnb compare --config`).")
    try:
        return RunConfig.from_dict(data)
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from None


def load_configs(path: str) -> list:
    """RunConfigs from a JSON or YAML file holding a list (or {"configs": [...]}); every problem at once."""
    from .config import RunConfig, value_kind
    from .errors import ConfigError

    data = read_config_file(path)
    if isinstance(data, dict) and "configs" not in data:
        raise ConfigError(f"{path} holds one mapping, but compare takes a list of RunConfigs: write [{{...}}, "
                          "{...}] (JSON), one '- ' entry per configuration (YAML), or {\"configs\": [...]}.")
    items = data["configs"] if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise ConfigError(f"{path}: compare takes a non-empty list of RunConfigs, got a {value_kind(items)}"
                          f"{' (empty)' if items == [] else ''}.")
    configs, problems = [], []
    for index, item in enumerate(items):
        try:
            configs.append(RunConfig.from_dict(item))
        except ConfigError as error:
            problems.append(f"{path} configuration {index}: {error}")
    if problems:
        raise ConfigError(problems)
    return configs


def chosen_configs(options: argparse.Namespace, base, verb: str, default) -> list:
    """The configurations a command runs: --config's file, else every combination of --vary over ``base``, else
    ``default()``; both flags at once are refused."""
    from .comparison import grid
    from .errors import ConfigError

    if options.config and options.vary:
        raise ConfigError(f"--config and --vary both say which configurations to {verb}; use one of them.")
    if options.config:
        return [c.replace(output_dir=options.runs) for c in load_configs(options.config)]
    if options.vary:
        return grid(base, parse_vary(options.vary))
    return default()


def parse_vary(specs: list[str]) -> dict[str, list]:
    """``["backend=eager,ort", "batch_size=8,16"]`` -> ``{"backend": ["eager", "ort"], "batch_size": [8, 16]}``,
    each value read by its RunConfig field's declared type (config.parse_value: ``length_grouping=true,false`` are
    booleans, ``backend=`` one of the backends); every problem reported at once as a ConfigError."""
    from .config import fields, parse_value
    from .errors import ConfigError

    known = fields()
    choices: dict[str, list] = {}
    problems = []
    for spec in specs:
        name, sep, values = spec.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not values.strip():
            problems.append(f"--vary {spec!r}: write FIELD=VALUE1,VALUE2, for example --vary backend=eager,ort.")
        elif name not in known:
            problems.append(f"--vary {spec!r}: {name} is not a RunConfig field; known: {', '.join(known)}.")
        elif name in choices:
            problems.append(f"--vary {name} is given twice; list all its values in one --vary {name}=A,B.")
        else:
            try:
                choices[name] = [parse_value(name, text.strip()) for text in values.split(",")]
            except ValueError as error:
                problems.append(f"--vary {spec!r}: {error}.")
    if problems:
        raise ConfigError(problems)
    return choices


def _column_arguments(parser: argparse.ArgumentParser) -> None:
    """--text-column and --label-column: which columns of --dataset hold the text and the class."""
    from .config import RunConfig

    for name, default in (("text_column", "text"), ("label_column", "label")):
        parser.add_argument("--" + name.replace("_", "-"), default=default, help=RunConfig.help(name))


def _columns(options: argparse.Namespace) -> dict:
    return {"text_column": options.text_column, "label_column": options.label_column}


def cmd_compare(options: argparse.Namespace) -> int:
    """Compare configurations in fresh runs; print the table, write report.html and results.json."""
    from . import interrupts, report
    from .comparison import Interrupted, compare
    from .config import RunConfig
    from .errors import ConfigError

    base = RunConfig(model=options.model, dataset=options.dataset, **_columns(options),
                     batch_size=options.batch_size, seq_len=options.seq_len, max_steps=options.steps,
                     warmup_steps=options.warmup,
                     output_dir=options.runs, evaluate=options.evaluate)
    try:
        configs = chosen_configs(options, base, "run", lambda: report.optimum_preset(base))
    except ConfigError as error:
        print(f"ortnb compare: {error}", file=sys.stderr)
        return 2
    runs: list[list] = [[] for _ in configs]  # the Run objects of each configuration, to read their errors

    def remember(run):
        runs[[c.label for c in configs].index(run.config.label)].append(run)
        print(f"ortnb compare: {run.config.label} -> {run.run_dir}", flush=True)

    incomplete, signalled = None, None
    try:
        table = compare(configs, baseline=options.baseline, repeats=options.repeats, on_run=remember,
                        wait_for_quiet_s=options.wait_for_quiet,
                        on_wait=lambda words: print(f"ortnb compare: {words}", flush=True))
    except ConfigError as error:
        print(f"ortnb compare: {error}", file=sys.stderr)
        return 2
    except Interrupted as interrupted:  # the run in progress was stopped; write what was measured
        table, signalled = interrupted.table, interrupts.exit_code(interrupted)
        incomplete = (f"interrupted by {interrupts.name(interrupted.signum)} after {interrupted.runs_done} of "
                      f"{interrupted.runs_planned} runs: the run in progress was stopped and configurations not "
                      "run read 'not run'")
        interrupts.say(f"ortnb compare: {incomplete}; writing the incomplete report...")
    profiled = _profile_for_report(configs, options) if options.profile and incomplete is None else None
    with interrupts.deferred(lambda again: interrupts.say(
            f"ortnb compare: {interrupts.name(again)}: the report is being written; it takes a moment", sys.stderr)):
        _report(table, configs, runs, options, incomplete, profiled)
    if signalled is not None:
        return signalled  # as a shell reports a command a signal ended: 128 + its number
    return 0 if all(s == "completed" for s in table["status"]) else 1


def _profile_for_report(configs: list, options: argparse.Namespace):
    """compare --profile: each configuration profiled in a fresh run after the measurements; None (and why) if
    a profile run fails, so the comparison's report is still written."""
    from .profiling import profile

    try:
        return profile(configs, on_run=lambda run: print(f"ortnb compare: profiling {run.config.label} -> "
                                                         f"{run.run_dir}", flush=True))
    except (RuntimeError, ValueError) as error:
        print(f"ortnb compare: the profile was not written: {str(error).splitlines()[0]}", file=sys.stderr)
        return None


def _report(table, configs: list, runs: list[list], options: argparse.Namespace, incomplete: str | None,
            profiled=None) -> None:
    """Print the table and write report.html, results.json and table.md (marked incomplete when interrupted)."""
    from . import report
    from .comparison import describe_best, describe_quality

    print(report.text_table(table))
    print(describe_best(table))
    if describe_quality(table):
        print(describe_quality(table))
    for note in table.attrs.get("notes") or []:
        print(f"ortnb compare: {note}")
    summaries = [[{**r.summary(), "error": r.error} for r in group] for group in runs]
    _print_failures(runs)
    json_path, html_path = report.write(table, configs, options.out, options.command_line, summaries,
                                        incomplete=incomplete, profile=profiled)
    (json_path.parent / "table.md").write_text((f"**Incomplete**: {incomplete}.\n\n" if incomplete else "")
                                               + report.markdown_table(table))
    print(f"ortnb compare: wrote {html_path} and {json_path}{' (incomplete)' if incomplete else ''}")


def _print_failures(runs: list[list]) -> None:
    """Why each failed run failed: the error's first line here; all of it in results.json and the run folder."""
    for group in runs:
        for run in group:
            if run.status == "failed":
                reason = (run.error or "no error recorded (see run.log)").strip().splitlines()[0]
                print(f"ortnb compare: {run.config.label} failed: {reason} (the whole error is in results.json; "
                      f"run folder {run.run_dir})", file=sys.stderr)


def cmd_tune(options: argparse.Namespace) -> int:
    """Find the fastest configuration this machine runs for a model and dataset within a time budget; print the
    ranked candidates and the winner, and write tune.json, config.json (the winner) and candidates.json."""
    from . import interrupts
    from .errors import ConfigError

    if options.target is not None:
        return _tune_to_target(options)
    signalled: list[int] = []
    try:
        result = _tune(options, signalled)
    except ConfigError as error:  # the API names budget_s; here it is --budget
        print(f"ortnb tune: {str(error).replace('budget_s', '--budget')}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:  # a second signal: the running candidate was stopped, nothing printed
        interrupts.say("ortnb tune: aborted; what was measured is kept in the cache and `ortnb tune` with the "
                       "same arguments goes on from it", sys.stderr)
        return interrupts.exit_code(interrupt)
    from .tuning import reason_lines, table_text

    if result.from_cache:
        print(f"ortnb tune: from the cache ({result.cache_path}, measured {result.created}); --refresh measures again")
    print(table_text(result))
    for line in reason_lines(result):
        print(f"  {line}")
    print(result.describe())
    _write_tune_files(result, options.out)
    if result.interrupted:
        return 128 + (signalled[0] if signalled else 2)  # as a shell reports a command a signal ended (Ctrl-C: 130)
    return 0 if result.best is not None else 1


def _tune_to_target(options: argparse.Namespace) -> int:
    """ortnb tune --target: the Optuna study; its table, the winner, and where the study is kept."""
    from .config import RunConfig
    from .errors import ConfigError, MissingDependencyError
    from .tuning import tune_to_target

    base = RunConfig(model=options.model, dataset=options.dataset, seq_len=options.seq_len, **_columns(options))
    try:
        found = tune_to_target(target=options.target, base=base, trials=options.trials,
                               max_samples=options.max_samples, storage=options.storage, runs_dir=options.runs)
    except (ConfigError, MissingDependencyError) as error:
        print(f"ortnb tune: {error}", file=sys.stderr)
        return 2
    print(found.table().to_string(index=False))
    best = found.best
    print(f"fastest to {options.target:g}: " + (", ".join(f"{k}={v}" for k, v in best.items()) if best else
                                                 "no trial reached the target (raise --max-samples or lower --target)"))
    print(f"the study: {found.storage} (optuna-dashboard {found.storage} opens it; run again to add trials)")
    return 0 if best else 1


def _tune(options: argparse.Namespace, signalled: list[int]):
    """tune() with progress lines; Ctrl-C, SIGTERM or SIGHUP stops the search (what was measured is kept, the
    temporary run folders are removed), a second one aborts. ``signalled`` receives the first signal's number."""
    import signal
    import threading

    from . import interrupts
    from .config import RunConfig
    from .errors import ConfigError
    from .tuning import format_progress, tune

    try:
        budget = float(options.budget)
    except ValueError:
        raise ConfigError(f"--budget must be a number of seconds (e.g. --budget 180), got {options.budget!r}.") \
            from None
    grid = parse_vary(options.vary) if options.vary else None
    base = RunConfig(model=options.model, dataset=options.dataset, **_columns(options), seq_len=options.seq_len,
                     max_steps=options.steps)
    stop = threading.Event()

    def interrupt(signum, _frame):
        stop.set()
        signalled.append(signum)
        for again in interrupts.ALL:  # a second signal raises, as it would without this handler
            signal.signal(again, signal.default_int_handler if again == signal.SIGINT else interrupts.raise_terminated)
        told = "" if signum == signal.SIGINT else f"{interrupts.name(signum)}: "
        interrupts.say(f"ortnb tune: {told}stopping the running candidate (Ctrl-C again to abort)...")

    previous = {signum: signal.signal(signum, interrupt) for signum in interrupts.ALL}
    try:
        return tune(base=base, budget_s=budget, grid=grid, refresh=options.refresh, stop=stop,
                    wait_for_quiet_s=options.wait_for_quiet,
                    on_progress=lambda event: print(f"ortnb tune: {format_progress(event)}", flush=True),
                    output_dir=options.runs, cache_dir=options.cache_dir)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _write_tune_files(result, out: str) -> None:
    """tune.json (everything measured), config.json (the winner: `ortnb run` trains it) and candidates.json
    (every runnable candidate: `ortnb compare --config` measures the same grid exhaustively)."""
    from pathlib import Path

    from .report import strict_json

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tune.json").write_text(json.dumps(strict_json(result.to_dict()), indent=1, allow_nan=False))
    written = ["tune.json"]
    try:
        (folder / "candidates.json").write_text(json.dumps([c.to_dict() for c in result.configs], indent=1))
        written.append("candidates.json")
        if result.best is not None:
            print(result.best.to_json())
            result.best.to_json(folder / "config.json")
            written.append("config.json")
    except TypeError as error:  # an in-memory dataset has no JSON form; tune.json still holds the measurements
        print(f"ortnb tune: {error}", file=sys.stderr)
    print(f"ortnb tune: wrote {', '.join(str(folder / name) for name in written)}"
          + (f"; train the winner with: ortnb run {folder / 'config.json'}" if "config.json" in written else ""))


def cmd_profile(options: argparse.Namespace) -> int:
    """Profile where a training step goes, op by op, for each configuration; print it, write profile.html
    and profile.json."""
    from .comparison import grid
    from .config import RunConfig
    from .errors import ConfigError
    from .profiling import profile
    from .profiling.views import text

    base = RunConfig(model=options.model, dataset=options.dataset, **_columns(options),
                     batch_size=options.batch_size, seq_len=options.seq_len, output_dir=options.runs)
    try:
        configs = chosen_configs(options, base, "profile", lambda: grid(base, parse_vary(["backend=eager,ort"])))
        result = profile(configs, steps=options.steps, warmup=options.warmup,
                         on_run=lambda run: print(f"ortnb profile: {run.config.label} -> {run.run_dir}", flush=True))
    except ConfigError as error:
        print(f"ortnb profile: {error}", file=sys.stderr)
        return 2
    except RuntimeError as error:  # a run failed: its error says why
        print(f"ortnb profile: {error}", file=sys.stderr)
        return 1
    print(text(result.to_dict()))
    written = result.save(options.out)
    print(f"ortnb profile: wrote {written['html']} and {written['json']}")
    return 0


def _setup_parser(commands) -> None:
    setup = commands.add_parser("setup", help=cmd_setup.__doc__)
    setup.add_argument("--force", action="store_true", help="rebuild even if a build exists (and fetch again)")
    setup.add_argument("--web", action="store_true",
                       help="only fetch ONNX Runtime Web's training build (for `ortnb edge web`)")
    setup.set_defaults(run=cmd_setup)


def _info_parser(commands) -> None:
    info = commands.add_parser("info", help="versions and what this machine can run")
    info.add_argument("--json", action="store_true")
    info.set_defaults(run=cmd_info)


def _run_parser(commands) -> None:
    run = commands.add_parser("run", help=cmd_run.__doc__, description=cmd_run.__doc__ + " Arguments after -- go "
                              "to torchrun, e.g. -- --nnodes 2 --node_rank 0 --rdzv_backend c10d "
                              "--rdzv_endpoint HOST:29500 for a multi-node run (start it on every node).")
    run.add_argument("config", help="a RunConfig JSON or YAML (.yaml/.yml) file")
    run.add_argument("launcher_args", nargs=argparse.REMAINDER, help="after --: torchrun's node arguments")
    run.set_defaults(run=cmd_run)


def _compare_parser(commands) -> None:
    cmp = commands.add_parser("compare", help=cmd_compare.__doc__, description=cmd_compare.__doc__ + " Without "
                              "--config it runs the 'optimum' preset: PyTorch + AdamW (baseline), PyTorch + fused AdamW, ORT + fused Adam, "
                              "ORT + fused Adam + ZeRO-1 over 2 processes, and eager bf16 and torch.compile where "
                              "this machine supports them.")
    cmp.add_argument("--config", help="JSON/YAML file with a list of RunConfigs (instead of the preset)")
    cmp.add_argument("--vary", action="append", default=[], metavar="FIELD=A,B",
                     help="compare every combination of these RunConfig values instead of the preset; repeatable, "
                          "e.g. --vary backend=eager,ort --vary optim=adamw_torch,adamw_torch_fused")
    cmp.add_argument("--model", default="minilm")
    cmp.add_argument("--dataset", default="rotten_tomatoes")
    _column_arguments(cmp)
    cmp.add_argument("--batch-size", type=int, default=16)
    cmp.add_argument("--seq-len", type=int, default=128)
    cmp.add_argument("--steps", type=int, default=30)
    cmp.add_argument("--warmup", type=int, default=5, help="steps left out of the statistics")
    cmp.add_argument("--evaluate", action="store_true",
                     help="also evaluate the held-out rows while training (accuracy beside speed); off by default: "
                          "a speed comparison then takes no time for evaluations")
    cmp.add_argument("--repeats", type=int, default=1, help="alternate the configurations this many times")
    cmp.add_argument("--baseline", type=int, default=0, help="index of the baseline configuration")
    cmp.add_argument("--wait-for-quiet", type=float, default=QUIET_WAIT_S, metavar="SECONDS",
                     help=f"before each run, wait up to this long for other processes to leave the CPU (default "
                          f"{QUIET_WAIT_S:g}; 0: do not wait); a run measured under load is flagged either way")
    cmp.add_argument("--profile", action="store_true",
                     help="also profile where each configuration's step goes (a fresh run each, after the "
                          "measurements) into report.html and profile.json")
    cmp.add_argument("--runs", default="runs", help="where run directories go")
    cmp.add_argument("--out", default="comparison", help="where report.html, results.json and table.md go")
    cmp.set_defaults(run=cmd_compare)


def _tune_parser(commands) -> None:
    tune = commands.add_parser("tune", help=cmd_tune.__doc__, description=cmd_tune.__doc__ + " Without --vary it "
                               "measures this machine's default grid: backend ort/eager x optimizer x precision "
                               "(bf16 where native) x padding (longest with length grouping, max_length) x 1 or 2 "
                               "processes x batch 8/16/32. Results are cached per machine, model, data, grid and "
                               "budget. Ctrl-C stops the search and keeps what was measured.")
    tune.add_argument("--model", default="minilm")
    tune.add_argument("--dataset", default="rotten_tomatoes")
    _column_arguments(tune)
    tune.add_argument("--budget", default="180", metavar="SECONDS",
                      help="time the whole search may take (default 180; it ends within it + 10%%)")
    tune.add_argument("--vary", action="append", default=[], metavar="FIELD=A,B",
                      help="the grid to measure instead of the default one; repeatable, e.g. --vary backend=eager,ort "
                           "--vary batch_size=16,32")
    tune.add_argument("--seq-len", type=int, default=128)
    tune.add_argument("--steps", type=int, default=60, help="max_steps of the winner's config.json")
    tune.add_argument("--wait-for-quiet", type=float, default=QUIET_WAIT_S, metavar="SECONDS",
                      help=f"before measuring, wait up to this long for other processes to leave the CPU (default "
                           f"{QUIET_WAIT_S:g}, not counted in the budget; 0: do not wait)")
    tune.add_argument("--refresh", action="store_true", help="measure again instead of using the cached result")
    tune.add_argument("--out", default="tuning", help="where tune.json, config.json and candidates.json go")
    tune.add_argument("--runs", default=None, help="keep the measurement runs in this folder (default: deleted)")
    tune.add_argument("--cache-dir", default=None, help="default ~/.cache/ortnb/tune ($ORTNB_CACHE/tune)")
    race = tune.add_argument_group("fastest to a target (an Optuna study of real runs; --budget and --vary do not "
                                   "apply)")
    race.add_argument("--target", type=float, default=None, metavar="ACCURACY",
                      help="rank by the seconds real runs take to reach this accuracy on the held-out split, not by "
                           "samples/s (e.g. --target 0.8)")
    race.add_argument("--trials", type=int, default=12, help="configurations to race (default 12)")
    race.add_argument("--max-samples", type=int, default=8192, help="each trial's cap in training samples")
    race.add_argument("--storage", default=None, help="the study's database: a SQLite file or a URL Optuna takes "
                                                      "(default studies.sqlite3 in the cache folder)")
    tune.set_defaults(run=cmd_tune)


def _profile_parser(commands) -> None:
    prof = commands.add_parser("profile", help=cmd_profile.__doc__, description=cmd_profile.__doc__ + " Without "
                               "--config or --vary it profiles PyTorch (eager) and ORT at the same settings. Each "
                               "run trains --warmup steps, then --steps profiled ones, then as many unprofiled "
                               "(what profiling cost).")
    prof.add_argument("--config", help="JSON/YAML file with a list of RunConfigs")
    prof.add_argument("--vary", action="append", default=[], metavar="FIELD=A,B",
                      help="profile every combination of these RunConfig values (default: --vary backend=eager,ort)")
    prof.add_argument("--model", default="minilm")
    prof.add_argument("--dataset", default="rotten_tomatoes")
    _column_arguments(prof)
    prof.add_argument("--batch-size", type=int, default=16)
    prof.add_argument("--seq-len", type=int, default=128)
    prof.add_argument("--steps", type=int, default=5, help="profiled steps (default 5)")
    prof.add_argument("--warmup", type=int, default=3, help="steps before the profiled ones (default 3)")
    prof.add_argument("--runs", default="runs", help="where run directories go")
    prof.add_argument("--out", default="profile", help="where profile.html and profile.json go")
    prof.set_defaults(run=cmd_profile)


def build_parser() -> argparse.ArgumentParser:
    """The ``ortnb`` parser: one subcommand each for setup, info, run, compare, tune, profile, then edge's."""
    from .edge.cli import add_commands

    parser = argparse.ArgumentParser(prog="ortnb", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    for add in (_setup_parser, _info_parser, _run_parser, _compare_parser, _tune_parser, _profile_parser):
        add(commands)
    add_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    from . import interrupts

    argv = sys.argv[1:] if argv is None else argv
    options = build_parser().parse_args(argv)
    options.command_line = " ".join(["ortnb", *argv])  # recorded in reports, to re-run them
    if getattr(options, "launcher_args", None) and options.launcher_args[0] == "--":
        options.launcher_args = options.launcher_args[1:]
    # SIGTERM and SIGHUP mean what Ctrl-C means: each command stops its runs and keeps what was written.
    with interrupts.as_keyboard_interrupt():
        try:
            return options.run(options)
        except KeyboardInterrupt as interrupt:  # a command's runs were stopped where it was interrupted
            interrupts.say(f"ortnb {options.command}: interrupted ({interrupts.name(interrupts.signum_of(interrupt))})",
                           sys.stderr)
            return interrupts.exit_code(interrupt)


if __name__ == "__main__":
    sys.exit(main())
