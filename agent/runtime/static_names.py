"""What a kernel file's Python code may touch, and what it may not: the lists the static check reads."""

from __future__ import annotations

# torch attributes a wrapper may touch: allocation (zero-filled for a workspace such as a split kernel's tickets;
# zeros compute nothing a wrong kernel could hide behind), metadata, dtypes, devices.
ALLOWED_TORCH = frozenset({
    "empty", "empty_like", "empty_strided", "zeros", "broadcast_shapes", "promote_types", "result_type",
    "Size", "Tensor", "device", "dtype", "float32", "float16", "bfloat16", "float64", "int32",
    "int64", "is_tensor", "cuda", "npu", "Generator", "manual_seed", "channels_last", "contiguous_format",
    "preserve_format", "bool", "int8", "uint8", "int16", "float", "half", "long", "int", "float8_e4m3fn",
    "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "finfo", "iinfo", "no_grad", "inference_mode",
    "zeros_like", "full", "get_default_dtype", "is_floating_point", "strided",
})
# Attributes that lead back to torch's compute from an allowed name (`torch.cuda.torch`, `x.nn`).
BLOCKED_ATTRIBUTES = frozenset({"torch", "nn", "functional", "ops", "linalg", "fft", "special", "_C", "_refs",
                                "_prims", "_decomp", "library", "overrides"})
# Calls that make a plain Python container (its .add() or .sort() is bookkeeping).
CONTAINER_CALLS = frozenset({"set", "list", "dict", "tuple", "sorted", "defaultdict", "OrderedDict", "Counter",
                             "deque"})
# Methods whose result is again a tensor over the same data.
TENSOR_VIEWS = frozenset({"contiguous", "reshape", "view", "to", "flatten", "unsqueeze", "squeeze", "expand", "cpu"})
# Tensor methods that compute: using them in the wrapper hands the work to torch.
COMPUTE_METHODS = frozenset({
    "add", "sub", "mul", "div", "exp", "log", "sqrt", "rsqrt", "relu", "sigmoid", "tanh", "clamp",
    "abs", "neg", "pow", "sum", "mean", "max", "min", "softmax", "matmul", "mm", "bmm", "addmm",
    "copy_", "fill_", "add_", "mul_", "where", "erf", "square", "reciprocal", "lerp", "addcmul",
    # reductions, scans, sorting, indexing math and linear algebra (what LLM-written kernels may hand off)
    "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "prod", "norm", "var", "std", "argmax", "argmin",
    "amax", "amin", "logsumexp", "log_softmax", "sort", "argsort", "topk", "kthvalue", "median", "mode",
    "any", "all", "masked_fill", "masked_fill_", "scatter", "scatter_add", "gather", "index_select",
    "index_add", "mv", "dot", "einsum", "baddbmm", "outer", "sub_", "div_", "clamp_", "exp_", "sigmoid_",
    "gelu", "silu", "erfinv", "log1p", "expm1", "sin", "cos", "floor", "ceil", "round", "sign", "maximum",
    "minimum", "copysign", "hypot", "atan2", "remainder", "fmod", "layer_norm", "rms_norm", "conv1d", "conv2d",
    # data movement that computes a result (a reversed or repeated copy)
    "flip", "roll", "repeat", "tile", "index_put_", "put_", "masked_scatter",
    # Python run over the elements (apply_, map_), or the data handed to another library to compute on
    "apply_", "map_", "map2_", "numpy", "tolist",
})
# Operators called by their method names (x.__add__(y)) compute as much as the operators do.
DUNDER_COMPUTE = frozenset(
    {f"__{prefix}{op}__" for op in ("add", "sub", "mul", "truediv", "floordiv", "matmul", "pow", "mod", "and", "or",
                                    "xor", "lshift", "rshift") for prefix in ("", "r", "i")}
    | {"__neg__", "__pos__", "__abs__", "__invert__"}
)
# Hooks into torch's dispatch: a class defining them sees (and could answer) every torch call.
OVERRIDES = frozenset({"__torch_function__", "__torch_dispatch__"})
# Modules a kernel file may import: the tensor library (its compute refused name by name), Triton and the standard
# library's plumbing. Anything else (numpy, operator, a sibling file) could compute the result instead of the kernel.
ALLOWED_MODULES = frozenset({
    "__future__", "typing", "math", "os", "sys", "functools", "itertools", "dataclasses", "enum", "warnings",
    "logging", "collections", "numbers", "contextlib", "json", "time", "argparse", "pathlib", "re", "random",
    "torch", "torch_npu", "triton",
})
# Ways around the imports: another module's namespace by name, the caller's frame.
REACH_AROUND = frozenset({("sys", "modules"), ("sys", "_getframe"), ("sys", "meta_path"), ("sys", "path_hooks")})
# Builtins and attributes that reach names the import check cannot see.
REACH_AROUND_NAMES = frozenset({"__import__", "eval", "exec", "compile", "vars", "globals", "locals", "breakpoint",
                                "__dict__", "__globals__", "__builtins__", "__subclasses__", "__code__", "__closure__"})
# Modules beside the kernel in the sandbox: the other three files and the service's harnesses and references.
SERVICE_MODULES = frozenset({"spec_reference", "previous_reference", "harness_common", "cross_check", "time_entry",
                             "profile_case", "tune_configs", "check_code", "trace_code", "code_common", "launch_guard"})
SIBLING_ROLES = ("baseline", "accuracy", "performance")
