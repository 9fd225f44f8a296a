"""Myriad's hook into Python processes under `myriad run` (interpose/python/README.md).

Kernels are timed, not run, so a value a kernel computes is not real. PyTorch's object
collectives (broadcast_object_list, all_gather_object, gather_object, scatter_object_list,
send/recv_object_list) size their buffers with a few kernels on tensors of sizes (a sum, a
max, a cat) whose inputs are real: they came from the host or from a small collective, which
carry real bytes. While one of those functions runs, this hook computes such small reductions,
concatenations and comparisons on the host instead (the tensors' bytes are copied back and
forth, as real copies), so the receivers get the true sizes and the objects survive. Nothing
else changes: outside those functions torch runs untouched.

Python imports the first `sitecustomize` on sys.path; `myriad run` puts this one first, and
it runs the one it shadows (Debian's, a virtualenv's, the user's) before anything else.
"""

import functools
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
# Tensors larger than this stay on the GPU (timed, not computed): sizes are a few elements.
_MAX_HOST_ELEMENTS = 1 << 16
_OBJECT_COLLECTIVES = (
    "broadcast_object_list",
    "all_gather_object",
    "gather_object",
    "scatter_object_list",
    "send_object_list",
    "recv_object_list",
)


def _run_shadowed_sitecustomize():
    for entry in sys.path:
        directory = os.path.abspath(entry or os.getcwd())
        if directory == _HERE:
            continue
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [directory])
        if spec is None or spec.loader is None or spec.origin is None:
            continue
        if os.path.dirname(os.path.abspath(spec.origin)) == _HERE:
            continue
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return


def _host_ops_mode():
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._pytree import tree_flatten, tree_map

    host_functions = {
        torch.sum, torch.Tensor.sum, torch.max, torch.Tensor.max, torch.min, torch.Tensor.min,
        torch.cat, torch.stack, torch.cumsum, torch.Tensor.cumsum,
        torch.Tensor.__lt__, torch.Tensor.__le__, torch.Tensor.__gt__, torch.Tensor.__ge__,
        torch.Tensor.__eq__, torch.Tensor.__ne__, torch.Tensor.__add__, torch.Tensor.__radd__,
        torch.Tensor.__iadd__, torch.Tensor.__sub__, torch.Tensor.__rsub__, torch.add,
        torch.Tensor.add, torch.Tensor.add_, torch.Tensor.__isub__, torch.Tensor.sub_,
    }
    in_place = {
        torch.Tensor.__iadd__, torch.Tensor.add_, torch.Tensor.__isub__, torch.Tensor.sub_,
    }

    class SmallOpsOnHost(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func in host_functions:
                leaves, _ = tree_flatten((args, kwargs))
                tensors = [t for t in leaves if isinstance(t, torch.Tensor)]
                if tensors and all(
                    t.is_cuda and t.numel() <= _MAX_HOST_ELEMENTS for t in tensors
                ):
                    device = tensors[0].device
                    on_host = tree_map(
                        lambda a: a.cpu() if isinstance(a, torch.Tensor) else a, (args, kwargs)
                    )
                    result = func(*on_host[0], **on_host[1])
                    if func in in_place:  # the GPU tensor gets the host's result
                        return args[0].copy_(result)
                    return tree_map(
                        lambda r: r.to(device) if isinstance(r, torch.Tensor) else r, result
                    )
            return func(*args, **kwargs)

    return SmallOpsOnHost


def _wrap_object_collectives(c10d):
    mode = None

    def wrap(function):
        @functools.wraps(function)
        def with_sizes_on_host(*args, **kwargs):
            nonlocal mode
            if mode is None:
                mode = _host_ops_mode()
            with mode():
                return function(*args, **kwargs)

        return with_sizes_on_host

    # Wrapped as soon as the module has run, before torch/distributed/__init__.py re-exports
    # them (`from .distributed_c10d import *`), so every name users call is the wrapper.
    for name in _OBJECT_COLLECTIVES:
        function = getattr(c10d, name, None)
        if function is not None:
            setattr(c10d, name, wrap(function))


def _live_ranks():
    """Under rank folding, torch's ranks that run as processes (MYRIAD_FOLD_LIVE: "0,1,2,3",
    or "0,64,128" when a live axis is slower than a folded one); empty when not folded."""
    listed = os.environ.get("MYRIAD_FOLD_LIVE", "")
    try:
        return frozenset(int(rank) for rank in listed.split(",") if rank)
    except ValueError:
        return frozenset()


def _count_live_members_in_store_barriers(c10d):
    """Rank folding: torch's store-based barrier (after init_process_group and new_group when
    TORCH_DIST_INIT_BARRIER=1) waits until every member of the group has added itself to a
    key in the TCPStore, but only the live members run. It is told to wait for those: the
    members of the group (its ranks, or the world) in MYRIAD_FOLD_LIVE."""
    live = _live_ranks()
    original = getattr(c10d, "_store_based_barrier", None)
    if not live or original is None:
        return

    @functools.wraps(original)
    def store_based_barrier(rank, store, group_name, rendezvous_count, *args, **kwargs):
        members = range(rendezvous_count)  # the world's ranks
        for group, name in c10d._world.pg_names.items():
            ranks = c10d._world.pg_group_ranks.get(group)
            if name == group_name and ranks is not None and len(ranks) == rendezvous_count:
                members = ranks.keys()  # global ranks of a group synchronised locally
        count = sum(1 for member in members if member in live)
        return original(rank, store, group_name, count, *args, **kwargs)

    c10d._store_based_barrier = store_based_barrier


def _describe_communicators(c10d):
    """Rank folding: a group's size alone can fit two layouts (a tensor-parallel group of 8, a
    data-parallel one of 8), its members cannot. Every process group torch names is described
    to Myriad's preload library by that name, which torch also gives the group's NCCL
    communicator (config.commName): its global ranks in order. The NCCL shim sends them with
    the communicator's join, and the mirrors' groups follow from them (docs/run.md,
    "Folding")."""
    original = getattr(c10d, "_process_group_name", None)
    if not _live_ranks() or original is None:
        return
    try:
        import ctypes

        describe = ctypes.CDLL(None).myriad_describe_communicator
    except (OSError, AttributeError):  # not under Myriad's preload
        return
    describe.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    describe.restype = None

    @functools.wraps(original)
    def process_group_name(ranks, *args, **kwargs):
        name = original(ranks, *args, **kwargs)
        try:
            members = ",".join(str(int(rank)) for rank in ranks or ())
        except (TypeError, ValueError):
            return name
        if members:  # the world's group names no ranks: its size says it all
            describe(str(name).encode(), members.encode())
        return name

    c10d._process_group_name = process_group_name


def _patch_c10d(c10d):
    _wrap_object_collectives(c10d)
    _count_live_members_in_store_barriers(c10d)
    _describe_communicators(c10d)


def _size_rendezvous_for_live_ranks(rendezvous):
    """Rank folding (`myriad run --fold dp`): only the first replica's ranks run, so only they
    connect to torch's TCPStore. Its server (on rank 0) waits until WORLD_SIZE workers have
    connected; it is told to wait for the live ones. The process group keeps WORLD_SIZE."""
    live = _live_ranks()
    original = getattr(rendezvous, "_create_c10d_store", None)
    if not live or original is None:
        return

    @functools.wraps(original)
    def create_c10d_store(hostname, port, rank, world_size, timeout, *args, **kwargs):
        return original(hostname, port, rank, min(world_size, len(live)), timeout, *args,
                        **kwargs)

    rendezvous._create_c10d_store = create_c10d_store


def _start_live_workers_only(api):
    """Rank folding with torchrun as the command: `myriad run` starts the agents of the nodes
    that hold live ranks only, numbered 0..n-1 for their rendezvous (PET_NODE_RANK, PET_NNODES
    count them). Each starts the workers whose global rank in the whole world (its place
    among the unfolded job's agents, MYRIAD_AGENT, times its workers, plus the local rank) is
    in MYRIAD_FOLD_LIVE, telling them that rank and the whole world's size (MYRIAD_FOLD_WORLD),
    as the unfolded job's agents would."""
    live = _live_ranks()
    world = int(os.environ.get("MYRIAD_FOLD_WORLD", "0"))
    node = int(os.environ.get("MYRIAD_AGENT", "0"))
    agent = getattr(api, "SimpleElasticAgent", None)
    original = getattr(agent, "_assign_worker_ranks", None)
    if not live or world <= 0 or original is None:
        return

    @functools.wraps(original)
    def assign_worker_ranks(self, *args, **kwargs):
        workers = original(self, *args, **kwargs)
        per_node = len(workers)
        started = []
        for worker in workers:
            rank = node * per_node + worker.local_rank
            if rank not in live:
                continue
            worker.global_rank = rank
            worker.role_rank = rank
            worker.world_size = world
            worker.role_world_size = world
            started.append(worker)
        return started

    agent._assign_worker_ranks = assign_worker_ranks


def _number_live_workers_consecutively(agent_module):
    """Rank folding with torchrun: when a live axis is slower than a folded one, an agent's
    live workers need not be its first local ranks (local ranks 0 and 4 of a node). torch's
    process context wants its processes keyed 0..n-1, and the agent finds each one's worker
    by that key in its (filtered) list of workers: they are keyed by their place in it. Each
    keeps its own LOCAL_RANK, and so its GPU."""
    original = getattr(agent_module, "start_processes", None)
    if not _live_ranks() or original is None:
        return

    @functools.wraps(original)
    def start_processes(name, entrypoint, args, envs, *rest, **kwargs):
        order = sorted(envs)
        if order == list(range(len(order))):
            return original(name, entrypoint, args, envs, *rest, **kwargs)
        place = {local_rank: i for i, local_rank in enumerate(order)}

        def renumbered(mapping):
            if not isinstance(mapping, dict):
                return mapping
            return {place.get(key, key): value for key, value in mapping.items()}

        rest = tuple(renumbered(r) for r in rest)
        if "log_line_prefixes" in kwargs:
            kwargs["log_line_prefixes"] = renumbered(kwargs["log_line_prefixes"])
        return original(name, entrypoint, renumbered(args), renumbered(envs), *rest, **kwargs)

    agent_module.start_processes = start_processes


# A block mask built on the host is evaluated one (batch, head) at a time above this many
# mask elements: create_block_mask materializes the whole B x H x Q x KV mask, and sums it in
# int64 (8 bytes an element).
_MAX_HOST_MASK_ELEMENTS = 1 << 26


def _block_mask_on_host(flex, build, mask_mod, B, H, Q_LEN, KV_LEN, BLOCK_SIZE,
                        separate_full_blocks, max_elements=_MAX_HOST_MASK_ELEMENTS):
    """create_block_mask's result computed on the host by `build` (the original), one
    (batch, head) at a time when the whole mask would be larger than max_elements."""
    import torch

    batches, heads = B or 1, H or 1
    if batches * heads * Q_LEN * KV_LEN <= max_elements or batches * heads == 1:
        return build(mask_mod, B, H, Q_LEN, KV_LEN, "cpu", BLOCK_SIZE,
                     separate_full_blocks=separate_full_blocks)
    rows = []
    for b in range(batches):
        for h in range(heads):
            def one(bi, hi, q_idx, kv_idx, b=b, h=h):
                return mask_mod(bi + b, hi + h, q_idx, kv_idx)

            rows.append(build(one, 1, 1, Q_LEN, KV_LEN, "cpu", BLOCK_SIZE,
                              separate_full_blocks=separate_full_blocks))

    def joined(field):
        parts = [getattr(m, field) for m in rows]
        if parts[0] is None:
            return None
        # Each part is [1, 1, ...]: the (batch, head) pairs stacked back into [B, H, ...].
        return torch.cat(parts, dim=0).reshape(batches, heads, *parts[0].shape[2:])

    return flex.BlockMask.from_kv_blocks(
        joined("kv_num_blocks"), joined("kv_indices"), joined("full_kv_num_blocks"),
        joined("full_kv_indices"), BLOCK_SIZE=rows[0].BLOCK_SIZE, mask_mod=mask_mod,
        seq_lengths=(Q_LEN, KV_LEN))


def _build_block_masks_on_host(flex):
    """FlexAttention's create_block_mask evaluates the mask_mod with kernels on the device it
    is given; under Myriad those are timed, not run, so a mask built on the GPU holds whatever
    its memory held (zeros: no blocks to attend). It is built on the host instead, where the
    mask_mod runs for real, and moved to the device (real copies): the program and the kernels'
    timing see the true blocks. A mask_mod that cannot run on the host (it reads a tensor on
    the GPU, whose contents kernels computed) is built as the program asked."""
    original = getattr(flex, "create_block_mask", None)
    if original is None:
        return
    import torch

    @functools.wraps(original)
    def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None, BLOCK_SIZE=128, *args,
                          **kwargs):
        # Traced by torch.compile (torchtitan compiles create_block_mask): built as asked, on
        # the device; a host build inside a graph would mix devices.
        if torch.compiler.is_compiling():
            return original(mask_mod, B, H, Q_LEN, KV_LEN, device, BLOCK_SIZE, *args, **kwargs)
        target = torch.device(device) if device is not None else None
        if target is None:
            accelerator = torch.accelerator.current_accelerator()
            target = accelerator if accelerator is not None else torch.device("cpu")
        plain = not args and set(kwargs) <= {"separate_full_blocks"}
        if target.type != "cuda" or not plain:
            return original(mask_mod, B, H, Q_LEN, KV_LEN, device, BLOCK_SIZE, *args, **kwargs)
        try:
            mask = _block_mask_on_host(flex, original, mask_mod, B, H, Q_LEN, KV_LEN, BLOCK_SIZE,
                                       kwargs.get("separate_full_blocks", True))
        except Exception:  # noqa: BLE001 - the mask_mod needs the device: build it there
            return original(mask_mod, B, H, Q_LEN, KV_LEN, device, BLOCK_SIZE, **kwargs)
        return mask.to(target)

    flex.create_block_mask = create_block_mask


def _end_rejection_sampling(init):
    """torch.nn.init.trunc_normal_ draws with normal_ and redraws until no sample lies outside
    [a, b], testing `mask.any()` on the GPU each pass. Under Myriad the samples are not
    computed (normal_ on the GPU gives no real values), so that test reads whatever the
    memory held and the loop may never end. While trunc_normal_ runs, a truth test of a GPU
    tensor still runs as the program asks (the reduction, the copy back and, for a DTensor,
    its collective, all timed) and then answers False: no sample out of range, which is true
    of the zeros Myriad stands for the samples with. A real GPU takes a few passes more, all
    before the first step."""
    original = getattr(init, "_no_grad_trunc_normal_", None)
    if original is None:
        return

    @functools.wraps(original)
    def trunc_normal(*args, **kwargs):
        # Imported at the call, not while torch.nn.init is being imported: importing more of
        # torch in the middle of torch's own import changes the order it starts in.
        import torch
        from torch.overrides import TorchFunctionMode

        class NoSampleOutOfRange(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                result = func(*args, **(kwargs or {}))
                if func is torch.Tensor.__bool__ and args and args[0].device.type == "cuda":
                    return False
                return result

        with NoSampleOutOfRange():
            return original(*args, **kwargs)

    init._no_grad_trunc_normal_ = trunc_normal


class _PatchAfterImport(importlib.abc.MetaPathFinder):
    """Patches torch's modules as soon as each has run (before others import its names)."""

    _PATCHES = {
        "torch.distributed.distributed_c10d": _patch_c10d,
        "torch.distributed.rendezvous": _size_rendezvous_for_live_ranks,
        "torch.distributed.elastic.agent.server.api": _start_live_workers_only,
        "torch.distributed.elastic.agent.server.local_elastic_agent":
            _number_live_workers_consecutively,
        "torch.nn.attention.flex_attention": _build_block_masks_on_host,
        "torch.nn.init": _end_rejection_sampling,
    }

    def __init__(self):
        self._pending = dict(self._PATCHES)

    def find_spec(self, fullname, path, target=None):
        patch = self._pending.pop(fullname, None)
        if patch is None:
            return None
        if not self._pending:
            sys.meta_path.remove(self)
        # Found by the other finders (this one no longer answers for the name).
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original_exec = loader.exec_module

        def exec_module(module):
            original_exec(module)
            patch(module)

        loader.exec_module = exec_module
        return spec


_run_shadowed_sitecustomize()
if os.environ.get("MYRIAD_SOCKET"):
    sys.meta_path.insert(0, _PatchAfterImport())
