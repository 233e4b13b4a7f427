"""What tune() measures: the grid of options, its candidates (each checked by validate()), and what is believed
before anything is measured (which candidates are likely fastest, how long one run takes).

Pure apart from validate(): no run starts here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import stats
from ..config import RunConfig, Task
from ..errors import ConfigError
from ..hardware import Capabilities
from ..validation import run_task, validate

# The options a tune varies: each changes how fast the same samples train, never what they are.
AXES = ("backend", "optim", "precision", "zero_stage", "num_processes", "threads", "batch_size", "padding",
        "length_grouping")
_NOT_AN_AXIS = {
    "model": "is what tune() measures on, not an option; call tune() once per model (model=...)",
    "dataset": "is what tune() measures on, not an option; call tune() once per dataset (dataset=...)",
    "task": "changes what is trained, so the speeds would not compare; set it in base=RunConfig(task=...)",
    "seq_len": "changes the samples trained, so the speeds would not compare; set it in base=RunConfig(seq_len=...)",
    "seed": "changes the data order, not the speed; set it in base=RunConfig(seed=...)",
    "learning_rate": "changes what is learned, not how fast; set it in base=RunConfig(learning_rate=...)",
    "freeze_embeddings": ("changes what is learned (the word embeddings stay as loaded), and a search that ranks by "
                          "samples/s alone would always pick it; set it in base=RunConfig(freeze_embeddings=True) and "
                          "judge it by held-out accuracy"),
    "dropout": ("changes what is learned, and a search that ranks by samples/s alone would always turn it off; set "
                "it in base=RunConfig(dropout=0.0) and judge it by held-out accuracy, or race it with "
                "ortnb.tune_to_target"),
    "max_steps": "is set by tune() for its short measurement runs; the winner keeps base's max_steps",
    "warmup_steps": "is set by tune() for its short measurement runs; the winner keeps base's warmup_steps",
    "epochs": "is how long the winner trains, not how fast; set it in base=RunConfig(epochs=...)",
    **{name: "is not measured (tune() runs train without evaluation); set it in base=" for name in (
        "evaluate", "eval_dataset", "eval_fraction", "eval_samples", "eval_batch_size", "eval_screen", "eval_every", "metric",
        "early_stopping_patience",
        "target", "report_to")},
    "output_dir": "is where runs go, not an option; pass tune(output_dir=...) to keep the measurement runs",
    "name": "labels a run; tune() labels each candidate by its options",
}

WARMUP_STEPS = 2  # the first step includes ORT's export and graph build, the second the allocator's warm-up
# Measured steps of a first-rung run; each later rung doubles them. Per-batch padding makes a step's
# samples/s follow its batch's length (4x apart from one step to the next with MiniLM), so a median of 4
# steps moved with which 4 it had. Over 6, the same steps measured again in a fresh process agreed within
# 10% for 7 of 12 candidates (median 8%: benchmarks/results/tune-check.json's agreement); longer rungs would
# not let the default 180 s measure every candidate on 2 cores.
RUNG1_STEPS = 6

# Log speed-ups believed before measuring (0 = no better than the alternatives). They only order the first
# rung, so that a budget that runs out has measured the likely fastest; measurements replace them.
_PRIOR = {("backend", "ort"): 0.10, ("backend", "compile"): -0.5,  # compile: minutes of compiling per short run
          ("optim", "adamw_torch_fused"): 0.02, ("optim", "adamw_ort_fused"): 0.05,
          ("precision", "bf16"): 0.2, ("precision", "fp16"): 0.2,
          ("padding", "longest"): 0.5,  # the same samples with less padding computed
          ("length_grouping", True): 0.1, ("zero_stage", 1): -0.05, ("zero_stage", 2): -0.1}

# Seconds before the first steps are timed (two Python processes import torch and transformers, the model
# loads, the data is tokenized, the first step runs: ORT exports and builds its graphs there), and seconds
# per step at batch 16, measured for the built-in models on a 2-core machine; used until runs are measured.
_STARTUP_S = {"tiny-bert": (8.0, 8.0, 0.1), "tiny-llama": (8.0, 9.0, 0.15), "minilm": (15.0, 22.0, 1.5),
              "smollm2": (30.0, 45.0, 8.0)}
_OTHER_MODEL_S = (20.0, 30.0, 2.0)
_COMPILE_S = 60.0
_TORCHRUN_S = 2.0  # several processes start through torchrun


def default_grid(base: RunConfig, caps: Capabilities, cuda_devices: int = 0) -> dict[str, list]:
    """The options worth measuring on this machine for ``base``'s task: few enough that the default budget
    (180 s) measures every one of them, with runs long enough to agree with a repeat (see RUNG1_STEPS).

    backend ort and eager (compile is left out: compiling takes longer than a whole short run here, so it
    cannot win a short measurement; add it with grid=); bf16 (and fp16) only where the hardware computes them
    natively; one process with every core against two processes with half of them; batch sizes 16 and 32.
    With CUDA also fused against plain AdamW (and ORT's FusedAdam), and per-batch against max_length padding
    (fixed shapes can pay on a GPU: not verified here). On a CPU the grid leaves out the two options an
    exhaustive compare of all 48 candidates found never ahead (benchmarks/results/history/
    2026-12-06-tune-check-48.json): plain AdamW where torch has the fused one (the same update in fewer
    passes over memory: ahead in 21 of 24 pairs, up to 1.53x, and never more than 4.5% behind, within a
    short run's noise), and max_length padding (the same samples with the padding computed: 2.5x to 3.8x
    slower). grid= puts them back.
    """
    grid: dict[str, list] = {"backend": ["ort", "eager"]}
    fused = ["adamw_torch_fused"] if caps.fused_adamw else []
    if caps.cuda:
        grid["optim"] = fused + ["adamw_torch"] + (["adamw_ort_fused"] if caps.ort_cuda else [])
    else:
        grid["optim"] = fused or ["adamw_torch"]
    grid["precision"] = ["no"] + (["bf16", "fp16"] if caps.cuda else ["bf16"] if caps.bf16_cpu_native else [])
    if run_task(base) != Task.CAUSAL_LM and caps.cuda:
        grid["padding"] = ["longest", "max_length"]  # length_grouping None: on with longest, off with max_length
    processes = [1, cuda_devices] if caps.cuda else [1, 2] if caps.cpu_cores >= 2 else [1]
    grid["num_processes"] = sorted({p for p in processes if p >= 1})
    # Not 8: a CPU's matmul units idle on small batches, and every candidate costs its start-up and steps
    # (1.4 to 6 s and about 0.2 to 1.7 s a step for MiniLM in a warm worker), so a smaller grid lets a 180 s
    # budget cover what can win.
    grid["batch_size"] = [16, 32]
    # An option with one value left is not varied; it stays in the grid only where it changes base's value
    # (fused AdamW on a CPU: every candidate uses it).
    return {name: values for name, values in grid.items() if len(values) > 1 or values != [getattr(base, name)]}


def grid_problems(grid) -> list[str]:
    """What is wrong with a grid= given by hand: every problem at once, each naming the field and the way out."""
    if not isinstance(grid, dict):
        return [f"grid must be a dict of RunConfig field -> list of values (e.g. {{'batch_size': [8, 16]}}), got "
                f"{type(grid).__name__}."]
    if not grid:
        return ["grid is empty: name at least one field with its values (e.g. {'backend': ['ort', 'eager']}), or "
                "pass grid=None for this machine's default grid."]
    problems = []
    for name, values in grid.items():
        if name in _NOT_AN_AXIS:
            problems.append(f"grid: {name} {_NOT_AN_AXIS[name]}.")
        elif name not in AXES:
            problems.append(f"grid: {name!r} is not an option tune() can vary; choose among {', '.join(AXES)}.")
        elif not isinstance(values, (list, tuple)):
            problems.append(f"grid: {name} must be a list of values (e.g. {name}=[{_example(name)}]), got "
                            f"{type(values).__name__} {values!r}.")
        elif not values:
            problems.append(f"grid: {name} has no values; give at least one (e.g. [{_example(name)}]) or leave "
                            f"{name} out of the grid.")
        elif len({repr(v) for v in values}) < len(values):
            problems.append(f"grid: {name} lists a value twice ({list(values)!r}); give each value once.")
    return problems


def _example(name: str) -> str:
    return {"backend": "'ort', 'eager'", "optim": "'adamw_torch_fused'", "precision": "'no', 'bf16'",
            "padding": "'longest', 'max_length'", "length_grouping": "True, False"}.get(name, "1, 2")


@dataclass
class Candidate:
    """One configuration of the grid and what its runs measured."""

    index: int  # position in the grid's product: breaks ties, so the order is deterministic
    label: str
    axes: dict  # field -> value, for the grid's fields
    problems: list[str] = field(default_factory=list)  # validate()'s, as text; empty: it can run here
    runs: list[dict] = field(default_factory=list)  # one record per measurement run (see measure.record)
    unreached: str | None = None  # why no run was made for it, when none was
    yours: bool = False  # the settings the search started from (the Dashboard's form): every speed-up is over it

    @property
    def runnable(self) -> bool:
        return not self.problems

    def measured_runs(self) -> list[dict]:
        return [r for r in self.runs if r.get("samples_per_s")]

    def values(self, key: str) -> list[float]:
        """Every measured step's value of ``key`` over all runs: more runs, a steadier median."""
        return [v for r in self.measured_runs() for v in r.get(key) or [] if v is not None]

    def median(self, key: str) -> float | None:
        return stats.median(self.values(key))

    @property
    def samples_per_s(self) -> float | None:
        return self.median("samples_per_s")

    @property
    def rung(self) -> int:
        """The last rung at which it was measured (0: never)."""
        return max((r["rung"] for r in self.measured_runs()), default=0)

    def settled(self) -> bool:
        """Whether the first rung is done with it: refused, measured or failed (a run cut off by the budget's
        end before it measured anything settles nothing)."""
        if self.problems or self.measured_runs():
            return True
        return any(r.get("status") == "failed" and not r.get("ended") for r in self.runs)

    @property
    def status(self) -> str:
        if self.problems:
            return "refused"
        if self.measured_runs():
            return "measured"
        if any(r.get("status") == "failed" for r in self.runs):
            return "failed"
        return "not measured"

    @property
    def reason(self) -> str | None:
        if self.problems:
            return "; ".join(self.problems)
        notes = [r["note"] for r in self.runs if r.get("note")]
        if notes or self.status != "not measured":
            return "; ".join(notes) or None
        return self.unreached

    def to_dict(self) -> dict:
        return {"index": self.index, "label": self.label, "axes": self.axes, "problems": self.problems,
                "runs": self.runs, "unreached": self.unreached, "yours": self.yours}

    @classmethod
    def from_dict(cls, data: dict) -> "Candidate":
        return cls(data["index"], data["label"], dict(data["axes"]), list(data.get("problems") or []),
                   list(data.get("runs") or []), data.get("unreached"), bool(data.get("yours")))


def build(base: RunConfig, grid: dict[str, list], caps: Capabilities | None = None) -> list[Candidate]:
    """Every combination of the grid applied to ``base``, in product order, each checked by validate()."""
    from ..comparison import grid as product

    configs = product(base.replace(name=None), grid)  # labels name every field the automatic label leaves out
    found = []
    for index, config in enumerate(configs):
        axes = {name: getattr(config, name) for name in grid}
        problems = [str(p) for p in validate(config, caps)]
        found.append(Candidate(index, config.label, axes, problems))
    return found


def with_yours(base: RunConfig, grid: dict[str, list], candidates: list[Candidate],
               caps: Capabilities | None = None) -> list[Candidate]:
    """The candidates with ``base``'s own settings among them, marked as yours: the grid's own combination when
    it holds base's values, else one more candidate (base as it is, checked by validate())."""
    axes = {name: getattr(base, name) for name in grid}
    same = next((c for c in candidates if c.axes == axes), None)
    if same is not None:
        same.yours = True
        return candidates
    config = base.replace(name=None)
    problems = [str(p) for p in validate(config, caps)]
    return [*candidates, Candidate(len(candidates), config.label, axes, problems, yours=True)]


def nothing_runnable(candidates: list[Candidate]) -> ConfigError:
    """The error for a grid of which validate() refuses every candidate: each distinct reason once."""
    counts: dict[str, int] = {}
    for candidate in candidates:
        for problem in candidate.problems:
            counts[problem] = counts.get(problem, 0) + 1
    reasons = [f"grid: no candidate can run on this machine; {count} of {len(candidates)} refused because {problem} "
               "Change grid= (or base=) to leave this out." for problem, count in counts.items()]
    return ConfigError(reasons)


def prior_effect(name: str, value) -> float:
    """Believed log speed-up of one option value (see _PRIOR); batches amortise a step's fixed costs a little."""
    if name == "batch_size" and isinstance(value, int) and value > 0:
        return 0.05 * math.log2(value / 16)
    return _PRIOR.get((name, value), 0.0)


def defaults(base: RunConfig) -> dict:
    """What every candidate has unless the grid says otherwise: the model and base's value of each option."""
    return {"model": base.model, **{name: getattr(base, name) for name in AXES}}


def prior_overhead(settings: dict) -> float:
    """Believed seconds from launch to the end of a run's first step (see _STARTUP_S); ``settings``: the model
    and the candidate's options (defaults() with its axes)."""
    model = settings.get("model")
    eager_s, ort_s, _ = _STARTUP_S.get(model, _OTHER_MODEL_S) if isinstance(model, str) else _OTHER_MODEL_S
    backend = settings.get("backend")
    startup = ort_s if backend == "ort" else eager_s + (_COMPILE_S if backend == "compile" else 0.0)
    return startup + (_TORCHRUN_S if _whole(settings.get("num_processes"), 1) > 1 else 0.0)


def prior_step(settings: dict) -> float:
    """Believed seconds of one later step, in proportion to the batch."""
    model = settings.get("model")
    _, _, step_s = _STARTUP_S.get(model, _OTHER_MODEL_S) if isinstance(model, str) else _OTHER_MODEL_S
    return step_s * _whole(settings.get("batch_size"), 16) / 16


def prior_cost(settings: dict, measured_steps: int) -> float:
    """Believed seconds of one measurement run: startup with the first step, then the other steps."""
    return prior_overhead(settings) + (WARMUP_STEPS + measured_steps - 1) * prior_step(settings)


def samples_per_step(settings: dict) -> int:
    return _whole(settings.get("batch_size"), 16) * _whole(settings.get("num_processes"), 1)


def _whole(value, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default
