"""Values of small tensors on the GPU, followed on the host (interpose/python/README.md).

Kernels are timed, not run, so a tensor a kernel computes holds no real values. Some kernels'
work depends on such values: FlexAttention's loops run over the blocks a block mask keeps, and
torchtitan builds that mask on the GPU from token positions (positions copied from the host,
document ids from a cumsum on the GPU, then a compiled create_block_mask). This module keeps,
beside each small tensor on the GPU whose inputs are real, its value computed on the host by
the same torch function (its "shadow"): the program's own kernels still run and are timed as
before; the shadow rides along.

- A shadow starts where the value is real: a copy from the host (`.to`, `.cuda`, `copy_`) or a
  factory function (`arange`, `full`, `tensor`, ...).
- A torch function whose tensor inputs all have shadows (or live on the host) gets one for each
  small output: the same function applied to the shadows. Random functions and uninitialised
  memory (`empty`) get none.
- A shadow holds for the tensor version it was computed at: any later write to the tensor
  (in place, or through a view) that was not followed leaves it without one.
- Only tensors of at most _MAX_ELEMENTS elements are followed, outside torch.compile's tracing
  and CUDA graph capture (a replay would change values behind Python's back).
- Nothing is followed inside a module's forward (the mode is off from the outermost module
  call to its return): torch.compile guards on the mode stack, and a checkpointed region's
  recomputation runs on autograd's thread, where the mode is not: were it on in the forward,
  the compiled code the recomputation finds would not be the forward's. Inputs are prepared
  outside the model (token positions, document masks), and that is where values matter.

Where a value is needed (a block mask's mask_mod reading a tensor on the GPU), `on_host()`
evaluates code with GPU tensors replaced by their shadows, and `write()` puts host-computed
bytes into device memory through Myriad's preload library, with no op of their own: the
program's kernels that compute them were timed already.
"""

import contextlib
import ctypes
import threading
import weakref

import torch
from torch.overrides import TorchFunctionMode, _get_current_function_mode_stack
from torch.utils._pytree import tree_flatten, tree_map

# Followed tensors are index-sized: positions and document ids are batch x sequence.
_MAX_ELEMENTS = 1 << 20

# Functions whose values are not a function of their inputs.
_RANDOM_WORDS = ("rand", "normal", "uniform", "bernoulli", "multinomial", "exponential",
                 "cauchy", "geometric", "dropout", "poisson", "empty")
# Functions whose CUDA tensor inputs give only their shape and dtype.
_SHAPE_ONLY = {torch.zeros_like, torch.ones_like, torch.full_like}
# Methods that write their first argument (besides those named `name_`).
_IN_PLACE = {"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
             "__ifloordiv__", "__imod__", "__iand__", "__ior__", "__ixor__", "__ilshift__",
             "__irshift__", "__ipow__"}

# id(tensor) -> (weak reference, shadow, tensor version when the shadow was taken)
_shadows = {}


def _forget(key):
    _shadows.pop(key, None)


def _plain_cuda(t):
    return type(t) is torch.Tensor and t.is_cuda


def shadow_of(t):
    """The host value of GPU tensor `t`, or None when it is not known."""
    entry = _shadows.get(id(t))
    if entry is None or entry[0]() is not t or entry[2] != t._version:
        return None
    return entry[1]


def _remember(t, host):
    if (host.shape != t.shape or host.dtype != t.dtype or host.is_cuda):
        return
    key = id(t)
    _shadows[key] = (weakref.ref(t, lambda _, key=key: _forget(key)),
                     host.detach().clone(), t._version)


class _Unknown(Exception):
    """A GPU tensor without a shadow where a value is needed."""


def _to_host(value):
    if isinstance(value, torch.Tensor):
        if not value.is_cuda:
            return value
        host = shadow_of(value) if type(value) is torch.Tensor else None
        if host is None:
            raise _Unknown()
        return host
    if isinstance(value, torch.device) and value.type == "cuda":
        return torch.device("cpu")
    return value


def _host_kwargs(kwargs):
    host = {k: _to_host(v) for k, v in kwargs.items()}
    if "device" in host and host["device"] is not None:
        device = host["device"]
        if isinstance(device, int) or (isinstance(device, str) and device.startswith("cuda")):
            host["device"] = "cpu"
    return host


def _in_place(name):
    return name in _IN_PLACE or (name.endswith("_") and not name.startswith("__"))


def _follow(func, args, kwargs, result, before):
    """Gives `result` (and an in-place op's first argument) shadows; `before` is that
    argument's shadow before the op wrote it."""
    if type(result) is torch.Tensor:  # the usual case, first
        if not result.is_cuda or result.numel() > _MAX_ELEMENTS:
            return
    elif not any(_plain_cuda(r) and r.numel() <= _MAX_ELEMENTS
                 for r in tree_flatten(result)[0]):
        if getattr(func, "__name__", "") != "__setitem__":
            return
    name = getattr(func, "__name__", "")
    if "out" in kwargs or any(word in name for word in _RANDOM_WORDS):
        return
    if torch.cuda.is_current_stream_capturing():
        return
    _follow_on_host(func, name, args, kwargs, result, before)


def _follow_on_host(func, name, args, kwargs, result, before):
    if func in (torch.Tensor.to, torch.Tensor.cuda) and args:
        host = _to_host(args[0])
        if _plain_cuda(result):
            _remember(result, host.to(result.dtype))
        return
    if func is torch.Tensor.copy_ and len(args) >= 2 and _plain_cuda(args[0]):
        host = torch.empty(args[0].shape, dtype=args[0].dtype).copy_(_to_host(args[1]))
        _remember(args[0], host)
        return
    if _in_place(name):
        # The op wrote its first argument: its shadow from before, written the same way.
        if before is None or not args or not _plain_cuda(args[0]):
            return
        host_args = [before.clone()] + tree_map(_to_host, list(args[1:]))
        func(*host_args, **_host_kwargs(kwargs))
        _remember(args[0], host_args[0])
        return
    if func in _SHAPE_ONLY and args and isinstance(args[0], torch.Tensor):
        like = torch.empty(args[0].shape, dtype=args[0].dtype)
        host_args = [like] + tree_map(_to_host, list(args[1:]))
    else:
        host_args = tree_map(_to_host, list(args))
    host_result = func(*host_args, **_host_kwargs(kwargs))
    devices, hosts = tree_flatten(result)[0], tree_flatten(host_result)[0]
    if len(devices) != len(hosts):
        return
    for device, host in zip(devices, hosts):
        if (_plain_cuda(device) and device.numel() <= _MAX_ELEMENTS and
                isinstance(host, torch.Tensor)):
            _remember(device, host)


class DeviceValues(TorchFunctionMode):
    """Follows small GPU tensors' values on the host (see the module's text)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if torch.compiler.is_compiling():  # traced by Dynamo: the graph gets the op alone
            return func(*args, **kwargs)
        before = None
        if args and _plain_cuda(args[0]) and _in_place(getattr(func, "__name__", "")):
            before = shadow_of(args[0])
        result = func(*args, **kwargs)
        try:
            _follow(func, args, kwargs, result, before)
        except Exception:  # noqa: BLE001 - a value not followed stays unknown
            pass
        return result


_mode = None
_module_depth = threading.local()


def _suspend():
    """Takes the mode off this thread's stack if it is on top; whether it was."""
    stack = _get_current_function_mode_stack()
    if _mode is None or not stack or stack[-1] is not _mode:
        return False
    torch._C._pop_torch_function_stack()
    return True


def _resume(suspended):
    if suspended:
        torch._C._push_on_torch_function_stack(_mode)


@contextlib.contextmanager
def suspended():
    """The mode off this thread's stack for the block (code torch.compile traces)."""
    token = _suspend()
    try:
        yield
    finally:
        _resume(token)


def _enter_module(module, args):
    if torch.compiler.is_compiling():
        return
    depth = getattr(_module_depth, "depth", 0)
    if depth == 0:
        _module_depth.suspended = _suspend()
    _module_depth.depth = depth + 1


def _leave_module(module, args, output):
    if torch.compiler.is_compiling():
        return
    depth = getattr(_module_depth, "depth", 0) - 1
    _module_depth.depth = max(depth, 0)
    if depth == 0:
        _resume(getattr(_module_depth, "suspended", False))
        _module_depth.suspended = False


def install():
    """Follows values from here on in the calling thread, outside modules' forwards."""
    global _mode
    if _mode is not None:
        return
    _mode = DeviceValues()
    _mode.__enter__()
    from torch.nn.modules import module

    module.register_module_forward_pre_hook(_enter_module)
    module.register_module_forward_hook(_leave_module, always_call=True)


class _ShadowsInPlace(TorchFunctionMode):
    """Runs torch functions with every GPU tensor argument replaced by its shadow."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*tree_map(_to_host, list(args)), **_host_kwargs(kwargs or {}))


def on_host(function, *args, **kwargs):
    """function(*args, **kwargs) with GPU tensors it reads replaced by their shadows; raises
    LookupError when one has none."""
    try:
        with _ShadowsInPlace():
            return function(*args, **kwargs)
    except _Unknown:
        raise LookupError("a tensor on the GPU whose values are not known") from None


_write = None


def write(device_tensor, host_tensor):
    """Puts host_tensor's values into device_tensor's memory (same shape, dtype, contiguous)
    as the values the program's kernels computed there. False when it cannot."""
    global _write
    if (not _plain_cuda(device_tensor) or not device_tensor.is_contiguous() or
            host_tensor.shape != device_tensor.shape or host_tensor.dtype != device_tensor.dtype):
        return False
    if _write is None:
        try:
            _write = ctypes.CDLL(None).myriad_write_computed
        except AttributeError:
            _write = False
        else:
            _write.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulong]
            _write.restype = ctypes.c_int
    if not _write:
        return False
    host = host_tensor.detach().contiguous()
    nbytes = host.numel() * host.element_size()
    if nbytes and _write(device_tensor.data_ptr(), host.data_ptr(), nbytes) != 0:
        return False
    _remember(device_tensor, host)
    return True
