"""Compile one generated kernel for a Hopper GPU (sm_90) on a machine without one: what the interpreter never checks.

    python hopper_compile.py TRITON_FILE KERNEL ARGS_JSON RESULT_JSON

ARGS_JSON holds "params", mapping kernel parameters to a type ("*bf16", "fp32") or, for a constexpr, {"value": ...}
(any not named is an i32), and "options" (num_warps, num_stages).
RESULT_JSON receives {"shared": bytes} or {"error": text}. Run with KERNELGEN_DEVICE=cuda and without
TRITON_INTERPRET, so that the file's kernels are real JIT functions.
"""

import importlib.util
import json
import sys
from pathlib import Path


def main() -> None:
    """Compile the kernel and write what came of it."""
    path, kernel_name, args_file, result_file = sys.argv[1:5]
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    spec = importlib.util.spec_from_file_location("generated_for_hopper", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = getattr(module, kernel_name)
    wanted = json.loads(Path(args_file).read_text())
    params, options = wanted["params"], wanted["options"]
    names = list(kernel.arg_names)
    signature = {n: ("constexpr" if isinstance(params.get(n), dict) else params.get(n, "i32")) for n in names}
    constexprs = {(names.index(n),): p["value"] for n, p in params.items() if isinstance(p, dict) and n in names}
    try:
        compiled = triton.compile(ASTSource(fn=kernel, signature=signature, constexprs=constexprs),
                                  target=GPUTarget("cuda", 90, 32), options=options)
        result = {"shared": compiled.metadata.shared}
    except Exception as error:  # the compiler's own message is the finding
        cause = error
        while cause.__cause__ is not None:
            cause = cause.__cause__
        result = {"error": f"{type(cause).__name__}: {cause}"[-2000:]}
    Path(result_file).write_text(json.dumps(result))


if __name__ == "__main__":
    main()
