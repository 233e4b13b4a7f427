"""Keep accelerate's view of the processes right for DeepSpeed on CPU ranks.

accelerate (1.16) only picks a distributed backend for DeepSpeed when there is an accelerator
device. On CPU ranks DeepSpeed still initialises torch.distributed (gloo), but accelerate records
one process: every rank then reads the same batches and Trainer's batch arithmetic is off by the
world size. The brief's ZeRO-1-on-CPU runs need the real numbers, so they are copied from
torch.distributed into accelerate's shared state.
"""

from __future__ import annotations

import logging
import os

import torch

logger = logging.getLogger("ortnb")


def needs_cpu_deepspeed_world_fix(state) -> bool:
    distributed = torch.distributed
    return (state is not None and str(getattr(state, "distributed_type", "")).endswith("DEEPSPEED")
            and distributed.is_available() and distributed.is_initialized()
            and state.num_processes != distributed.get_world_size())


def fix_cpu_deepspeed_world(state) -> bool:
    """Copy rank and world size from torch.distributed into accelerate's PartialState (shared by all)."""
    if not needs_cpu_deepspeed_world_fix(state):
        return False
    distributed = torch.distributed
    state.num_processes = distributed.get_world_size()
    state.process_index = distributed.get_rank()
    state.local_process_index = int(os.environ.get("LOCAL_RANK", state.process_index))
    logger.info("ortnb: accelerate saw 1 process for DeepSpeed on CPU; using torch.distributed's %d ranks.",
                state.num_processes)
    return True


def launched_on_cpu_ranks() -> bool:
    """Several ranks (torchrun, deepspeed, mpirun) and no CUDA device."""
    world = max(int(os.environ.get(name, "1") or 1) for name in ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE"))
    return world > 1 and not torch.cuda.is_available()


def imply_use_cpu_for_ddp(args) -> bool:
    """On CPU ranks without DeepSpeed, accelerate only sets up DDP when use_cpu=True; otherwise it
    records DistributedType.NO and each rank trains alone with unsynchronised gradients, silently.
    (With DeepSpeed, use_cpu=True would switch DeepSpeed off, so it is left alone.)"""
    if args.use_cpu or args.deepspeed or not launched_on_cpu_ranks():
        return False
    args.use_cpu = True
    logger.info("ortnb: CPU ranks without CUDA: use_cpu=True, so the ranks train with DDP (gloo).")
    return True
