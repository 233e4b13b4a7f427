"""validate(cfg): every reason a RunConfig cannot run on this machine, all at once, before anything starts.

Each problem names the field and the way out. ``choices(cfg)`` runs the same checks for every
value of the closed fields, which is what the widgets grey out.
"""

from __future__ import annotations

import difflib
import itertools
import math
import os
import typing
from dataclasses import dataclass
from pathlib import Path

from .data import checks as data_checks
from .data import columns as data_columns
from .data.builtin import DATASETS, Asset
from .data.columns import Columns
from .data.readers import SUFFIXES as DATA_SUFFIXES
from .models import checks as model_checks
from .models.builtin import MODELS
from .hardware import Capabilities, capabilities
from .runs import layout
from .runs.layout import NAME_LIMIT
from .config import Backend, Optimizer, Padding, Precision, RunConfig, Schedule, Task
from .errors import ConfigError

BACKENDS = Backend.values()
OPTIMIZERS = Optimizer.values()
ZERO_STAGES = (0, 1, 2)
ZERO3 = ("zero_stage=3 is not available in ortnb runs: ONNX Runtime cannot trace ZeRO-3's partitioned parameters, "
         "so backend='ort' refuses it; ZeRO-3 works with backend='eager' when you train with ORTTrainer directly "
         "(deepspeed={'zero_optimization': {'stage': 3}}), but the run worker does not yet gather the partitioned "
         "weights when it saves the model. Choose zero_stage 0, 1 or 2.")
CHOICE_FIELDS = {"backend": BACKENDS, "optim": OPTIMIZERS, "precision": Precision.values(),
                 "zero_stage": ZERO_STAGES}


@dataclass(frozen=True)
class Problem:
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def validate(cfg: RunConfig, caps: Capabilities | None = None, nodes: int = 1) -> list[Problem]:
    """Every problem with ``cfg`` on this machine (empty when the run can start). ``nodes``: how many
    nodes the run spans (``ortnb run ... -- --nnodes N``); ZeRO shards over all of their processes."""
    caps = caps or capabilities()
    problems: list[Problem] = []
    for check in (_check_numbers, _check_choices, _check_padding, _check_hardware, _check_model_and_data,
                  _check_data, _check_output, _check_name):
        check(cfg, caps, problems)
    _check_sharding(cfg, nodes, problems)
    _check_report_to(cfg, problems)
    return problems


def notes(cfg: RunConfig) -> list[str]:
    """What a run of ``cfg`` will do that a user should know before it starts (a new classifier head, the
    token it pads with), in the words the run log and the summary card use. Empty when there is nothing."""
    found = []
    task = run_task(cfg)
    if task == Task.SEQUENCE_CLASSIFICATION and not _builtin_model(cfg.model) and isinstance(cfg.model, str):
        try:
            labels = data_checks.labels(cfg.dataset, task, Columns.of(cfg))
        except ConfigError:
            labels = None
        plan = model_checks.head_plan(model_checks.saved_config(cfg.model), labels)
        if plan.note:
            found.append(plan.note)
    folder = _local_model_folder(cfg)
    if folder is not None:
        found.extend(model_checks.look_tokenizer(str(folder), task).notes)
    return found


def _local_model_folder(cfg) -> Path | None:
    if not isinstance(cfg.model, str) or _builtin_model(cfg.model):
        return None
    path = Path(cfg.model).expanduser()
    return path if (path / "config.json").is_file() else None


def check(cfg: RunConfig, caps: Capabilities | None = None, nodes: int = 1) -> None:
    """Raise one ConfigError listing every problem, or return."""
    problems = validate(cfg, caps, nodes)
    if problems:
        raise ConfigError([str(p) for p in problems])


def choices(cfg: RunConfig, caps: Capabilities | None = None) -> dict[str, dict]:
    """For each closed field, each value -> None if it can run with the rest of ``cfg``, else the reason."""
    caps = caps or capabilities()
    table = {}
    for name, values in CHOICE_FIELDS.items():
        table[name] = {}
        for value in values:
            blocking = [p for p in validate(cfg.replace(**{name: value}), caps)
                        if p.field == name or name in p.message]
            table[name][value] = blocking[0].message if blocking else None
    return table


def engine_precisions(caps: Capabilities) -> dict[str, dict[str, str | None]]:
    """For each engine, each precision -> None where a run can use it on a machine with ``caps``, else why not.
    The same hardware rules validate() applies (``ortnb info`` prints this table), without a model or data."""
    table: dict[str, dict[str, str | None]] = {}
    for backend in BACKENDS:
        table[backend] = {}
        for precision in Precision.values():
            problems: list[Problem] = []
            _check_hardware(RunConfig(backend=backend, precision=precision, optim="adamw_torch"), caps, problems)
            table[backend][precision] = problems[0].message if problems else None
    return table


def _check_numbers(cfg, caps, problems):
    def need(condition, field, message):
        if not condition:
            problems.append(Problem(field, message))

    need(_is_int(cfg.num_processes) and cfg.num_processes >= 1, "num_processes",
         f"must be a whole number >= 1, got {cfg.num_processes!r}.")
    if _is_int(cfg.num_processes) and cfg.num_processes > caps.cpu_cores and not caps.cuda:
        problems.append(Problem("num_processes", f"{cfg.num_processes} processes on {caps.cpu_cores} CPU cores would "
                                                 f"fight for cores; use at most {caps.cpu_cores}."))
    for name, low, high, unit in (("batch_size", 1, None, ""), ("seq_len", 8, 8192, " tokens"),
                                  ("max_steps", 1, None, "")):
        wrong = _out_of_range(getattr(cfg, name), low, high, unit)
        if wrong and not (name == "max_steps" and cfg.max_steps is None):  # None: 60 steps, or what epochs takes
            problems.append(Problem(name, wrong))
    need(cfg.epochs is None or (_is_number(cfg.epochs) and 0 < cfg.epochs <= 10_000), "epochs",
         f"must be a number of passes over the data above 0 (1, 2.5), or None, got {cfg.epochs!r}.")
    if cfg.epochs is not None and cfg.max_steps is not None:
        problems.append(Problem("epochs", f"epochs={cfg.epochs!r} and max_steps={cfg.max_steps!r} both say how long "
                                          "to train; set one of them and leave the other None."))
    need(_is_int(cfg.warmup_steps) and cfg.warmup_steps >= 0, "warmup_steps",
         f"must be >= 0, got {cfg.warmup_steps!r}.")
    if _is_int(cfg.warmup_steps) and _is_int(cfg.max_steps) and cfg.warmup_steps >= cfg.max_steps >= 1:
        problems.append(Problem("warmup_steps", f"{cfg.warmup_steps} warm-up steps leave none of the {cfg.max_steps} "
                                                "steps to measure; raise max_steps or lower warmup_steps."))
    need(isinstance(cfg.learning_rate, (int, float)) and 0 < cfg.learning_rate < 1, "learning_rate",
         f"must be between 0 and 1, got {cfg.learning_rate!r}.")
    need(_is_int(cfg.seed) and cfg.seed >= 0, "seed", f"must be a whole number >= 0, got {cfg.seed!r}.")
    need(isinstance(cfg.freeze_embeddings, bool), "freeze_embeddings",
         f"must be True or False, got {cfg.freeze_embeddings!r}.")
    need(cfg.dropout is None or (isinstance(cfg.dropout, (int, float)) and not isinstance(cfg.dropout, bool)
                                 and 0 <= cfg.dropout < 1), "dropout",
         f"must be a probability from 0 (off) to below 1, or None for the model's own; got {cfg.dropout!r}.")
    _check_evaluation_numbers(cfg, problems)
    need(cfg.threads is None or (_is_int(cfg.threads) and cfg.threads >= 1), "threads",
         f"must be None or >= 1, got {cfg.threads!r}.")
    stall = cfg.stall_timeout_s
    need(stall is None or (isinstance(stall, (int, float)) and not isinstance(stall, bool) and math.isfinite(stall)
                           and stall > 0), "stall_timeout_s",
         f"must be None (10 median step times, at least 60 s) or a number of seconds > 0, got {stall!r}.")


def _out_of_range(value, low: int, high: int | None = None, unit: str = "") -> str | None:
    """Why ``value`` is no whole number from ``low`` to ``high`` (None when it is one), naming the value and what
    to use instead: "0 is below 1; use 1 or more." (the form shows what was typed, never a silently clamped value)."""
    allowed = f"{low} to {high}{unit}" if high is not None else f"{low} or more"
    if not _is_int(value):
        return f"must be a whole number, {allowed}, got {value!r}."
    if value < low:
        return f"{value} is below {low}; use {allowed}."
    if high is not None and value > high:
        return f"{value} is above {high}; use {allowed}."
    return None


def _check_evaluation_numbers(cfg, problems):
    if not isinstance(cfg.evaluate, bool):
        problems.append(Problem("evaluate", f"must be True or False, got {cfg.evaluate!r}."))
    if cfg.eval_samples == 0 and _is_int(cfg.eval_samples):
        problems.append(Problem("eval_samples", "eval_samples=0 no longer turns evaluation off (it is now the most "
                                                "held-out rows evaluated each time); use evaluate=False for no "
                                                "evaluation, or eval_samples=None for all held-out rows."))
    elif cfg.eval_samples is not None and not (_is_int(cfg.eval_samples) and cfg.eval_samples >= 1):
        problems.append(Problem("eval_samples", f"must be a whole number >= 1 or None, got {cfg.eval_samples!r}."))
    if cfg.eval_screen is not None and not (_is_int(cfg.eval_screen) and cfg.eval_screen >= 0):
        problems.append(Problem("eval_screen", f"must be a whole number of held-out rows >= 0, or None (200 rows "
                                               f"with a target), got {cfg.eval_screen!r}."))
    elif cfg.eval_screen and cfg.target is None:
        problems.append(Problem("eval_screen", f"eval_screen={cfg.eval_screen} screens held-out rows to decide when a "
                                               "target is worth checking on the whole split, and this run has no "
                                               "target: set target too, or leave eval_screen blank."))
    if cfg.eval_batch_size is not None and not (_is_int(cfg.eval_batch_size) and cfg.eval_batch_size >= 1):
        problems.append(Problem("eval_batch_size", f"must be a whole number of rows >= 1, or None (4 x batch_size, "
                                                   f"at most 128), got {cfg.eval_batch_size!r}."))
    if not (_is_number(cfg.eval_fraction) and 0 < cfg.eval_fraction < 1):
        problems.append(Problem("eval_fraction", f"must be a share between 0 and 1 (0.1 holds out 10% of the rows), "
                                                 f"got {cfg.eval_fraction!r}."))
    if cfg.eval_every is not None and not (_is_int(cfg.eval_every) and cfg.eval_every >= 1):
        problems.append(Problem("eval_every", f"must be a number of steps >= 1, or None for five evaluations spread "
                                              f"over the run, got {cfg.eval_every!r}."))
    patience = cfg.early_stopping_patience
    if patience is not None and not (_is_int(patience) and patience >= 1):
        problems.append(Problem("early_stopping_patience", f"must be a number of evaluations >= 1, or None, got "
                                                           f"{patience!r}."))
    elif patience is not None and cfg.evaluate is False:
        problems.append(Problem("early_stopping_patience", "early stopping needs evaluation, but evaluate=False; set "
                                                           "evaluate=True or early_stopping_patience=None."))
    if cfg.evaluate is False and (cfg.eval_every is not None or cfg.metric is not None or cfg.target is not None):
        set_fields = [name for name in ("target", "eval_every", "metric") if getattr(cfg, name) is not None]
        problems.append(Problem(set_fields[0], f"{' and '.join(set_fields)} set with evaluate=False: nothing would be "
                                               "evaluated; set evaluate=True or leave them None."))


def _check_evaluation(cfg, task: str, train: data_checks.Look, problems):
    """The metric fits the task; the held-out rows exist and hold only classes the training rows have."""
    from .evaluation import METRIC_NAMES, metrics_for

    if cfg.metric is not None and cfg.metric not in metrics_for(task):
        known = ", ".join(metrics_for(task))
        if cfg.metric in METRIC_NAMES:
            message = f"{cfg.metric} is not a metric of {task}; choose {known}."
        else:
            message = f"unknown metric {cfg.metric!r}. Choose between {known}."
        problems.append(Problem("metric", message))
    elif cfg.target is not None:
        from .evaluation import default_metric, target_problem

        problem = target_problem(cfg.metric or default_metric(task), cfg.target)
        if problem:
            problems.append(Problem("target", problem))
    if cfg.evaluate is not True:
        return
    if cfg.eval_dataset is None:
        builtin_split = cfg.dataset == "rotten_tomatoes" or task == Task.CAUSAL_LM
        if not builtin_split and train.labels is not None and train.rows is not None \
                and train.rows <= train.labels.count:
            problems.append(Problem("eval_fraction", f"the {train.rows} rows have one per class, so none can be held "
                                                     "out for evaluation; give eval_dataset, more rows, or "
                                                     "evaluate=False."))
        return
    if not isinstance(cfg.eval_dataset, str) and not hasattr(cfg.eval_dataset, "column_names"):
        problems.append(Problem("eval_dataset", f"must be a file path or a datasets.Dataset, got "
                                                f"{type(cfg.eval_dataset).__name__}."))
        return
    if isinstance(cfg.eval_dataset, str) and cfg.eval_dataset in DATASETS:
        problems.append(Problem("eval_dataset", f"{cfg.eval_dataset} is a built-in training set; leave eval_dataset "
                                                "None to use its own held-out split, or pass a file."))
        return
    held = data_checks.look(cfg.eval_dataset, task, Columns.of(cfg))
    problems.extend(Problem("eval_dataset", message) for message in held.problems)
    if held.problems or held.labels is None or train.labels is None:
        return
    problem = data_checks.held_out_problem(held.labels, train.labels, data_checks.display_name(cfg.eval_dataset),
                                           data_checks.display_name(cfg.dataset))
    if problem:
        problems.append(Problem("eval_dataset", problem))


def _check_report_to(cfg, problems):
    if cfg.report_to is None:
        return
    names = [cfg.report_to] if isinstance(cfg.report_to, str) else cfg.report_to
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        problems.append(Problem("report_to", f"must be a tracker name or a list of them (tensorboard, mlflow, wandb), "
                                             f"got {cfg.report_to!r}."))
        return
    import importlib.util

    needs = {"tensorboard": ("tensorboard", "tensorboardX"), "mlflow": ("mlflow",), "wandb": ("wandb",)}
    for name in names:
        if name in ("none", "all"):
            problems.append(Problem("report_to", f"report_to={name!r}: name the trackers (tensorboard, mlflow, "
                                                 "wandb), or None for none."))
        elif name not in needs:
            problems.append(Problem("report_to", f"unknown tracker {name!r}. Choose between tensorboard, mlflow, "
                                                 "wandb."))
        elif not any(importlib.util.find_spec(module) for module in needs[name]):
            problems.append(Problem("report_to", f"{name} is not installed: pip install {needs[name][0]}, or leave "
                                                 f"it out of report_to."))


def _check_choices(cfg, caps, problems):
    for name, values in CHOICE_FIELDS.items():
        value = getattr(cfg, name)
        if name == "zero_stage" and _is_int(value) and value == 3:
            problems.append(Problem(name, ZERO3))
        elif value not in values:
            shown = ", ".join(map(str, values))
            problems.append(Problem(name, f"unknown value {value!r}. Choose between {shown}."))
    if cfg.task is not None and cfg.task not in Task.values():  # a tuple: a YAML list is no key
        problems.append(Problem("task", f"unknown task {cfg.task!r}. Choose sequence-classification or causal-lm."))
    if cfg.lr_schedule not in Schedule.values():
        problems.append(Problem("lr_schedule", f"unknown schedule {cfg.lr_schedule!r}. Choose linear (Trainer's decay "
                                               "over every step) or wsd (warmup-stable-decay)."))


PADDINGS = typing.get_args(Padding)


def _check_padding(cfg, caps, problems):
    if cfg.padding is not None and cfg.padding not in PADDINGS:
        problems.append(Problem("padding", f"unknown value {cfg.padding!r}. Choose between longest (each batch to "
                                           "its longest row) and max_length (every row to seq_len), or None."))
    if cfg.length_grouping is not None and not isinstance(cfg.length_grouping, bool):
        problems.append(Problem("length_grouping", f"must be True, False or None, got {cfg.length_grouping!r}."))
    if cfg.length_grouping is True and cfg.padding == "max_length":
        problems.append(Problem("length_grouping", "length_grouping=True with padding='max_length' groups rows that "
                                                   "are all padded to seq_len anyway; use padding='longest', or "
                                                   "length_grouping=None."))
    if run_task(cfg) == Task.CAUSAL_LM and (cfg.padding is not None or cfg.length_grouping is not None):
        set_fields = [f"{name}={getattr(cfg, name)!r}" for name in ("padding", "length_grouping")
                      if getattr(cfg, name) is not None]
        problems.append(Problem("padding" if cfg.padding is not None else "length_grouping",
                                f"a causal LM trains on the text cut into blocks of exactly seq_len tokens: no row is "
                                f"padded, so {' and '.join(set_fields)} would change nothing; leave padding and "
                                "length_grouping as None."))


def _check_hardware(cfg, caps, problems):
    if cfg.backend == "ort":
        if not caps.ort_training:
            problems.append(Problem("backend", "backend='ort' needs ONNX Runtime training, which is not installed: "
                                               "pip install 'ortnb[ort]' (CPU) or onnxruntime-training==1.19.2 (CUDA)."))
        if cfg.precision in ("bf16", "fp16") and not caps.ort_cuda:
            problems.append(Problem("precision", f"{cfg.precision} with backend='ort' needs the CUDA execution "
                                                 "provider: ONNX Runtime's CPU provider has no "
                                                 f"{cfg.precision} MatMul kernel. Use backend='eager' for "
                                                 f"{cfg.precision}, or precision='no'."))
    if cfg.precision == "fp16" and not caps.cuda and cfg.backend != "ort":
        instead = "precision='bf16'" if caps.bf16_cpu_native else "precision='no' (this CPU has no bf16 units either)"
        problems.append(Problem("precision", f"fp16 training needs a CUDA GPU; on this CPU use {instead}."))
    if cfg.precision == "bf16" and not caps.cuda and not caps.bf16_cpu_native and cfg.backend != "ort":
        problems.append(Problem("precision", "this CPU has no bf16 instructions (AVX512-BF16 or AMX): bf16 would "
                                             "be emulated, tens of times slower than fp32. Use precision='no' here."))
    if cfg.optim == "adamw_ort_fused" and not caps.ort_cuda:
        problems.append(Problem("optim", "adamw_ort_fused is ONNX Runtime's FusedAdam, a CUDA kernel; this machine "
                                         "has no CUDA. Use optim='adamw_torch_fused' (fused AdamW on the CPU)."))
    if cfg.optim == "adamw_torch_fused" and not caps.fused_adamw:
        problems.append(Problem("optim", "this torch has no fused AdamW; use optim='adamw_torch'."))
    if cfg.zero_stage in (1, 2):
        if not caps.deepspeed:
            problems.append(Problem("zero_stage", "ZeRO needs DeepSpeed: pip install 'ortnb[deepspeed]', or "
                                                  "zero_stage=0."))
        if cfg.backend == "compile":
            problems.append(Problem("zero_stage", "ZeRO with backend='compile' is not supported by ortnb runs; "
                                                  "use backend='eager' or 'ort' with ZeRO."))
    if cfg.backend == "compile" and not caps.torch_compile:
        problems.append(Problem("backend", "backend='compile' needs a C++ compiler on the CPU (g++); install it or "
                                           "use backend='eager'."))


def _check_sharding(cfg, nodes: int, problems):
    if cfg.zero_stage in (1, 2) and cfg.num_processes == 1 and nodes <= 1:
        problems.append(Problem("zero_stage", f"zero_stage={cfg.zero_stage} with num_processes=1 shards "
                                              "nothing; use num_processes=2 or more, or zero_stage=0."))


def _check_model_and_data(cfg, caps, problems):
    model_task = _model_task(cfg, problems)
    task = cfg.task or model_task
    if cfg.model == "smollm2" and not caps.gguf:
        problems.append(Problem("model", "the built-in smollm2 is a GGUF file: pip install gguf."))
    if task == Task.CAUSAL_LM and cfg.model in ("minilm", "tiny-bert"):
        problems.append(Problem("task", f"{cfg.model} is an encoder (BERT) and cannot be a causal LM; use "
                                        "model='smollm2' or task='sequence-classification'."))
    data_task = _dataset_task(cfg, problems)
    task = task or run_task(cfg)  # a local folder without task= trains as a classifier in the worker
    if data_task and data_task != task:
        problems.append(Problem("dataset", f"{cfg.dataset!r} is {data_task} data but the task is {task}; use "
                                           f"{'hamlet' if task == Task.CAUSAL_LM else 'rotten_tomatoes'} or change "
                                           "the model/task."))
    limit = _builtin_model(cfg.model).max_positions if _builtin_model(cfg.model) else None
    if limit and _is_int(cfg.seq_len) and cfg.seq_len > limit:
        problems.append(Problem("seq_len", f"{cfg.model} reads at most {limit} tokens; use seq_len <= {limit}."))


def _model_task(cfg, problems) -> str | None:
    model = cfg.model
    if _builtin_model(model):
        return _builtin_model(model).task
    if not isinstance(model, str) or not model:
        problems.append(Problem("model", f"must be a name or path, got {model!r}."))
        return None
    path = Path(model).expanduser()
    if path.is_dir():
        if not (path / "config.json").exists():
            problems.append(Problem("model", f"{model} has no config.json; pass a save_pretrained() folder."))
        return None
    if model_checks.looks_like_path(model):
        problems.append(Problem("model", _not_a_model_folder(model, path)))
    elif "/" not in model:
        problems.append(Problem("model", f"unknown built-in model {model!r}. Choose between "
                                         f"{', '.join(MODELS)}, a local folder or a Hub id (org/name)."))
    elif os.environ.get("HF_HUB_OFFLINE") == "1":
        problems.append(Problem("model", f"{model} is a Hub id but HF_HUB_OFFLINE=1; use a local folder or a built-in "
                                         "model."))
    return None


def _not_a_model_folder(model: str, path: Path) -> str:
    """Why a local model path cannot be read, naming where it was looked for and what to pass instead."""
    instead = (f"pass the folder save_pretrained() wrote (the one holding config.json), a Hub id (org/name) or one of "
               f"{', '.join(MODELS)}.")
    if path.exists():
        return f"{model} is a file, not a folder; {instead}"
    near = _nearest_folder(path)
    way_out = f"did you mean {near}? Or {instead}" if near else f"check the path, or {instead}"
    return f"no such folder {model} (looked for {path.absolute()}); {way_out}"


def _nearest_folder(path: Path) -> Path | None:
    """A folder beside ``path`` with a name close to its name (a typing slip: models/minilm-ft for models/minilmft)."""
    try:
        names = [p.name for p in itertools.islice(path.parent.iterdir(), 1000) if p.is_dir()]
    except OSError:  # no parent folder either, or one that cannot be listed
        return None
    near = difflib.get_close_matches(path.name, names, n=1)
    return path.parent / near[0] if near else None


def _dataset_task(cfg, problems) -> str | None:
    data = cfg.dataset
    if not isinstance(data, str):
        return None if hasattr(data, "column_names") else problems.append(Problem(
            "dataset", f"must be a name, a file path or a datasets.Dataset, got {type(data).__name__}.")) or None
    if data in DATASETS:
        return DATASETS[data].task
    path = Path(data).expanduser()
    if not path.exists():
        problems.append(Problem("dataset", f"unknown dataset {data!r}: not a built-in name "
                                           f"({', '.join(DATASETS)}) nor an existing file."))
    elif path.is_dir():
        if not (path / "dataset_info.json").exists():
            problems.append(Problem("dataset", f"{path} is a folder but not a Dataset.save_to_disk() folder."))
    elif path.suffix not in DATA_SUFFIXES:
        problems.append(Problem("dataset", f"{path.name}: unsupported file type; use {', '.join(DATA_SUFFIXES)}."))
    return Task.CAUSAL_LM if path.suffix == ".txt" else None


def _check_data(cfg, caps, problems):
    """What a cheap look at the rows finds (data_checks): encoding, bad lines, columns, labels."""
    named = data_columns.field_problems(cfg.text_column, cfg.label_column)
    problems.extend(Problem(field, message) for field, message in named)
    if named or any(p.field == "dataset" for p in problems):
        return  # the data is missing or of the wrong kind: looking inside would only repeat that
    text_file = isinstance(cfg.dataset, str) and cfg.dataset.endswith(".txt")
    task = Task.CAUSAL_LM if text_file else run_task(cfg)
    found = data_checks.look(cfg.dataset, task, Columns.of(cfg))
    problems.extend(Problem("dataset", message) for message in found.problems)
    if not found.problems:
        _check_evaluation(cfg, task, found, problems)
    folder = _local_model_folder(cfg)
    if folder is not None and not any(p.field == "model" for p in problems):
        problems.extend(Problem("model", message) for message in model_checks.look_tokenizer(str(folder), task).problems)
        problems.extend(Problem("model", message) for message in model_checks.weights_problems(str(folder), task))


def run_task(cfg) -> str:
    """The task the worker will train: the asked one, the built-in model's, else sequence classification."""
    if cfg.task:
        return cfg.task
    model = _builtin_model(cfg.model)
    return model.task if model else Task.SEQUENCE_CLASSIFICATION


def _check_output(cfg, caps, problems):
    output = cfg.output_dir
    if not isinstance(output, str) or not output.strip():
        problems.append(Problem("output_dir", f"must be a folder path (str or pathlib.Path), got {output!r}; each "
                                              "run creates a new folder under it, e.g. output_dir='runs'."))
        return
    target = Path(output).expanduser().absolute()
    long_part = next((part for part in target.parts if len(part.encode()) > 255), None)
    if long_part:
        problems.append(Problem("output_dir", f"the folder name {long_part[:40]}... is {len(long_part.encode())} "
                                              "bytes; file systems allow 255. Choose a shorter output_dir."))
        return
    existing = _nearest_existing(target)
    if not existing.is_dir():
        problems.append(Problem("output_dir", f"{existing} is a file, so {output} cannot be created under it; "
                                              "choose another output_dir."))
    elif not os.access(existing, os.W_OK | os.X_OK):
        problems.append(Problem("output_dir", f"{existing} is not writable for this user, so {output} cannot be "
                                              f"created; choose another output_dir (for example under {Path.home()})."))


def _nearest_existing(target: Path) -> Path:
    """The folder (or file) where creating ``target`` would start; the root always exists."""
    for path in [target, *target.parents]:
        try:
            if path.exists():
                return path
        except OSError:  # a parent that cannot be searched; the next one up says whether it is writable
            continue
    return Path(target.anchor)


def _check_name(cfg, caps, problems):
    name = cfg.name
    if name is None:
        return
    if not isinstance(name, str):
        problems.append(Problem("name", f"must be text or None, got {type(name).__name__} {name!r}."))
        return
    slug = layout.slug(name)  # as runs/layout.new_run_dir names the folder
    if len(slug) > NAME_LIMIT:
        problems.append(Problem("name", f"is {len(slug)} characters as a folder name; the run folder is "
                                        f"'<time>-<name>' and a file name holds at most 255 bytes, so use a name of "
                                        f"at most {NAME_LIMIT} letters and digits."))


def _builtin_model(model) -> Asset | None:
    """The built-in model of that name; None for anything else (a hand-written config may hold a list)."""
    return MODELS.get(model) if isinstance(model, str) else None


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
