"""ORT's own levers, one at a time, on a bare ORTModule training loop (MiniLM, batch 16 x 128, fp32, CPU).

What: each lever changes one setting of the bare ORTModule loop; every lever runs in a fresh process,
alternating over repeats; the first WARMUP steps are dropped; medians and interquartile ranges of step
times; every ratio is against "default" measured in the same invocation (see harness.py). The loop does
Trainer's default math (harness.bare_loop): forward, backward, clip_grad_norm_(params, 1.0), AdamW with
Trainer's default implementation (fused=True where transformers defaults to adamw_torch_fused, as on torch
>= 2.8), lr 5e-5, weight_decay 0, linear LR schedule, zero_grad. No lever changes the model's math except
where that is the lever itself (denormal-zero flushes denormals).

Why: to find which of ORT's settings, if any, moves ORT training on this CPU, and which cannot be tried
here and why. MFU of each lever is against this machine's fp32 matmul peak and MiniLM's model FLOPs per
step, both measured once in this parent process before any lever runs.

    python benchmarks/ort_levers.py --steps 20 --warmup 5 --repeats 1 --out benchmarks/results/ort-levers.json

Levers:
  default            ortnb's defaults: ORTModule's own (session graph_optimization_level ORT_ENABLE_ALL,
                     intra-op threads 0 = one per physical core, spinning on) + the compat layer
  threads-1 (-N)     SessionOptions.intra_op_num_threads = 1 (N)
  mem-pattern        SessionOptions.enable_mem_pattern / enable_mem_reuse on (ORTModule turns both off)
  memopt-1           ORT memory optimizer level 1 (layer-wise recompute)
  no-compute-opt     ORT's compute optimizer off (FLOP reduction by upstreaming slicing ops): the execution
                     managers' runtime option enable_compute_optimizer = False (and the label-sparsity
                     part with it), set before the first step. Not via ORTMODULE_ENABLE_COMPUTE_OPTIMIZER=0:
                     in onnxruntime-training 1.19.2 that crashes the export with "TypeError: 'NoneType'
                     object is not iterable" (_add_check_label_sparsity_hook returns None when disabled, and
                     is passed the embedding flag, which the variable also turns off)
  module-with-loss   the loss computed inside the graph, the graph returns only the loss
  foreach-adamw      torch.optim.AdamW(foreach=True) instead of Trainer's default (fused)
  no-spinning        session config "session.intra_op.allow_spinning" = "0": ORT's pool threads sleep
                     instead of spinning between ops
  denormal-zero      session config "session.set_denormal_as_zero" = "1" (flush-to-zero, denormals-are-zero)
  dynamic-block      session config "session.dynamic_block_base" = "4": the intra-op pool splits parallel
                     loops into shrinking blocks for load balancing, instead of fixed ones
  opt-basic          SessionOptions.graph_optimization_level = ORT_ENABLE_BASIC (default ORT_ENABLE_ALL)
  opt-extended       SessionOptions.graph_optimization_level = ORT_ENABLE_EXTENDED
  omp-passive        OMP_WAIT_POLICY=PASSIVE in that process's environment (set before torch is imported):
                     torch's OpenMP threads sleep instead of spinning between ops, leaving the cores to ORT's
                     pool
Session levers record the values they set and how many sessions they reached; one that reached no session
is not counted. A run whose ORTModule fell back to PyTorch is marked and not counted.

Not available here (recorded under "not_available", each checked when the script runs): ORT's FusedAdam
(onnxruntime.training.optim.FusedAdam, CUDA only); the CUDA, ROCm and DNNL execution providers (absent from
the onnxruntime-training-cpu build: the JSON gives onnxruntime.get_available_providers() exactly); ORT's
padding elimination (the embedding sparsity optimizer: gated to CUDA devices in
onnxruntime/training/ortmodule/_graph_transition_manager.py, and no CPU kernels for FlattenAndUnpad /
PadAndUnflatten in this build).

A lever that fails is reported with its stderr tail and recorded as failed, with its reason; the others run.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys

import harness

LEVERS = ("default", "threads-1", "mem-pattern", "memopt-1", "no-compute-opt", "module-with-loss", "foreach-adamw",
          "no-spinning", "denormal-zero", "dynamic-block", "opt-basic", "opt-extended", "omp-passive")
CONFIG_ENTRIES = {"no-spinning": ("session.intra_op.allow_spinning", "0"),
                  "denormal-zero": ("session.set_denormal_as_zero", "1"),
                  "dynamic-block": ("session.dynamic_block_base", "4")}
OPTIMIZATION_LEVELS = {"opt-basic": "ORT_ENABLE_BASIC", "opt-extended": "ORT_ENABLE_EXTENDED"}
ENVIRONMENT = {"omp-passive": {"OMP_WAIT_POLICY": "PASSIVE"}}
RUNTIME_OPTIONS = {"memopt-1": {"memory_optimization_level": 1},
                   "no-compute-opt": {"enable_compute_optimizer": False, "enable_label_sparse_optimizer": False}}


def _is_session_lever(lever: str) -> bool:
    return lever.startswith("threads-") or lever == "mem-pattern" or lever in CONFIG_ENTRIES or \
        lever in OPTIMIZATION_LEVELS


# --- child side -----------------------------------------------------------------------------------


def _session_patch(lever: str) -> dict:
    """Change the SessionOptions ORTModule builds, for the levers that live there. Returns a record that
    fills in as sessions are configured: how many, and the values set."""
    import onnxruntime
    from onnxruntime.training.ortmodule import _graph_execution_manager as manager

    applied = {"sessions": 0, "set": {}}
    original = manager.GraphExecutionManager._get_session_config

    def patched(self):
        options, providers, provider_options = original(self)
        if lever.startswith("threads-"):
            options.intra_op_num_threads = int(lever.split("-")[1])
            applied["set"]["intra_op_num_threads"] = options.intra_op_num_threads
        if lever == "mem-pattern":
            options.enable_mem_pattern = True
            options.enable_mem_reuse = True
            applied["set"].update(enable_mem_pattern=options.enable_mem_pattern,
                                  enable_mem_reuse=options.enable_mem_reuse)
        if lever in CONFIG_ENTRIES:
            key, value = CONFIG_ENTRIES[lever]
            options.add_session_config_entry(key, value)
            applied["set"][key] = options.get_session_config_entry(key)
        if lever in OPTIMIZATION_LEVELS:
            options.graph_optimization_level = getattr(onnxruntime.GraphOptimizationLevel, OPTIMIZATION_LEVELS[lever])
            applied["set"]["graph_optimization_level"] = str(options.graph_optimization_level)
        applied["sessions"] += 1
        applied["providers"] = list(providers or [])
        return options, providers, provider_options

    manager.GraphExecutionManager._get_session_config = patched
    return applied


def measure(lever: str, batch: int, seq: int, steps: int) -> dict:
    import torch

    from ortnb.backends import ort_compat

    for name, value in ENVIRONMENT.get(lever, {}).items():  # set by the parent; checked here
        assert os.environ.get(name) == value, f"{name} is {os.environ.get(name)!r} in the child, not {value!r}"
    ortmodule = ort_compat.load_ortmodule()
    applied = _session_patch(lever)
    defaults = harness.trainer_defaults()
    kind = "foreach" if lever == "foreach-adamw" else harness.adamw_kind(defaults["optim"])
    model, train = harness.load_workload(batch, seq, steps)
    model.set_attn_implementation("eager")
    model.train()

    class LossOnly(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, **inputs):
            return self.inner(**inputs).loss

    with_loss = lever == "module-with-loss"
    wrapped = ortmodule.ORTModule(LossOnly(model) if with_loss else model)
    for name, value in RUNTIME_OPTIONS.get(lever, {}).items():  # read when the graphs are built (first step)
        for training in (True, False):
            setattr(wrapped._torch_module._execution_manager(training)._runtime_options, name, value)
        applied["set"][name] = value
    times = harness.bare_loop(wrapped, model, train, batch, steps, kind, defaults,
                              loss_of=(lambda loss: loss) if with_loss else (lambda output: output.loss))
    fallback = harness.ort_fallback(wrapped)
    if not fallback:  # the runtime options the built graphs saw
        options = wrapped._torch_module._execution_manager(True)._runtime_options
        applied["runtime_options_after"] = {name: getattr(options, name) for name in RUNTIME_OPTIONS.get(lever, {})}
    environment = ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "ORTMODULE_ENABLE_COMPUTE_OPTIMIZER")
    result = {"lever": lever, "step_times": times, "engine": "pytorch" if fallback else "onnxruntime",
              "fallback": fallback, "optimizer": f"torch.optim.AdamW({kind})", "threads": torch.get_num_threads(),
              "session": applied, "environment": {k: os.environ.get(k) for k in environment}}
    if fallback:
        result["not_counted"] = f"ORTModule fell back to PyTorch: {fallback}"
    elif _is_session_lever(lever) and not applied["set"]:
        result["not_counted"] = "the SessionOptions patch reached no ORT session: the lever did not apply"
    return result


# --- parent side ----------------------------------------------------------------------------------


def _kernel_missing(op: str, inputs: list[tuple], outputs: list[str]) -> str:
    """Try to create a CPU session holding one com.microsoft ``op``; returns ORT's answer."""
    import onnxruntime
    from onnx import TensorProto, helper

    types = {"float": TensorProto.FLOAT, "int64": TensorProto.INT64}
    graph = helper.make_graph(
        [helper.make_node(op, [name for name, _, _ in inputs], outputs, domain="com.microsoft")], "probe",
        [helper.make_tensor_value_info(name, types[kind], shape) for name, kind, shape in inputs],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT if i == 0 else TensorProto.INT64, None)
         for i, name in enumerate(outputs)])
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    try:
        onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return "a CPU kernel exists"
    except Exception as error:  # noqa: BLE001 - the message is the answer
        return str(error).strip().splitlines()[-1][:300]


def not_available() -> dict:
    """What cannot run on this machine, each with the reason as checked now."""
    import onnxruntime

    providers = onnxruntime.get_available_providers()
    found = {}
    missing_eps = [ep for ep in ("CUDAExecutionProvider", "ROCMExecutionProvider", "DnnlExecutionProvider")
                   if ep not in providers]
    for ep in missing_eps:
        found[ep] = (f"not in onnxruntime.get_available_providers() == {providers} (onnxruntime "
                     f"{onnxruntime.__version__}, {_ort_distribution()} build)")
    try:
        import torch

        from ortnb.backends import ort_compat

        ort_compat.load_ortmodule()
        from onnxruntime.training.optim import FusedAdam

        try:
            FusedAdam([torch.nn.Parameter(torch.zeros(1))])
            fused = None
        except Exception as error:  # noqa: BLE001
            fused = f"{type(error).__name__}: {error}"[:300]
        if fused or not torch.cuda.is_available():
            found["ort-fused-adam"] = (
                "onnxruntime.training.optim.FusedAdam needs CUDA (its multi-tensor Adam kernel is a CUDA extension; "
                f"torch.cuda.is_available() is {torch.cuda.is_available()}). Constructing it here: "
                f"{fused or 'constructed, but it cannot step CPU tensors'}")
        from onnxruntime.training.ortmodule._graph_transition_manager import GraphTransitionManager

        source = inspect.getsource(GraphTransitionManager._add_check_embedding_sparsity_hook)
        gated = 'device.type != "cuda"' in source
        kernels = {op: _kernel_missing(op, inputs, outputs) for op, inputs, outputs in (
            ("FlattenAndUnpad", [("x", "float", [4, 3]), ("idx", "int64", [2])], ["y", "unflatten_dims"]),
            ("PadAndUnflatten", [("x", "float", [2, 3]), ("idx", "int64", [2]), ("shape", "int64", [2])], ["y"]))}
        found["padding-elimination"] = (
            "ORTModule's embedding sparsity optimizer (padding elimination) "
            + ("returns early unless device.type == 'cuda' (GraphTransitionManager._add_check_embedding_sparsity_hook "
               "in onnxruntime/training/ortmodule/_graph_transition_manager.py)" if gated else
               "is not gated to CUDA in this onnxruntime version (check again)")
            + "; its kernels on the CPU execution provider: "
            + "; ".join(f"{op}: {answer}" for op, answer in kernels.items()))
    except Exception as error:  # noqa: BLE001 - record the probe's own failure rather than lose the run
        found["probe-error"] = f"{type(error).__name__}: {error}"[:600]
    return found


def _ort_distribution() -> str:
    from importlib.metadata import PackageNotFoundError, version

    for name in ("onnxruntime-training-cpu", "onnxruntime-training", "onnxruntime"):
        try:
            return f"{name} {version(name)}"
        except PackageNotFoundError:
            continue
    return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--levers", default=",".join(LEVERS))
    parser.add_argument("--out", default="benchmarks/results/ort-levers.json")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one lever in this process
    options = parser.parse_args()
    if options.one:
        harness.emit(measure(options.one, options.batch, options.seq, options.steps))
        return
    levers = options.levers.split(",")
    unknown = [lever for lever in levers if lever not in LEVERS and not lever.startswith("threads-")]
    if unknown:
        parser.error(f"unknown lever(s) {unknown}; known: {', '.join(LEVERS)} (and threads-N)")
    if options.steps <= options.warmup:
        parser.error("--steps must exceed --warmup")

    roof = harness.roofline(options.batch, options.seq)
    harness.announce(roof)
    import onnxruntime

    providers = onnxruntime.get_available_providers()
    unavailable = not_available()

    def command_for(lever: str) -> list[str]:
        return [sys.executable, __file__, "--one", lever, "--steps", str(options.steps), "--batch",
                str(options.batch), "--seq", str(options.seq)]

    outcome = harness.alternate(levers, options.repeats, command_for, options.warmup,
                                env_for=lambda lever: ENVIRONMENT.get(lever))
    result, medians = harness.record(options, "levers", levers, outcome)
    base = medians.get("default")
    result.update({
        "speedup_vs_default": {lever: base / m for lever, m in medians.items()} if base else {},
        "mfu": {lever: harness.mfu(roof, m) for lever, m in medians.items()},
        "roofline": roof,
        "available_providers": providers,
        "not_available": unavailable,
        "applied": {lever: [r.get("session", {}).get("set") for r in outcome.results(lever)] for lever in levers},
        "engine": {lever: sorted({r["engine"] for r in outcome.results(lever)}) for lever in levers},
        "failures": outcome.failures(),
        "runs": outcome.runs,
    })
    harness.write(options.out, result)
    print(json.dumps({"speedup_vs_default": result["speedup_vs_default"], "mfu": result["mfu"],
                      "available_providers": providers, "not_available": unavailable,
                      "failures": {v: [f["reason"] for f in fs] for v, fs in result["failures"].items()}}, indent=2))


if __name__ == "__main__":
    main()
