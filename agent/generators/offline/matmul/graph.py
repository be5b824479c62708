"""What a matrix-product operator is made of: the product's two operands and the elementwise epilogue above it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agent.generators.offline.lowering import Lowered, NotLowerable, lower
from agent.ir import registry
from agent.ir.expr import Expr, Node, Ref, walk
from agent.ir.printer import to_text
from agent.reader.agreement import positive_inputs
from agent.spec import OpSpec

EpilogueKind = Literal["row", "col", "tile"]
# Names the kernel uses after its K loop, its scalar arguments and the wrapper's locals: an input, parameter or
# output so named would be overwritten.
RESERVED = frozenset({"M", "N", "K", "pid", "batch", "offs_m", "offs_n", "offs_k", "m_mask", "n_mask", "mask",
                      "out_ptrs", "out_ptr", "a_ptr", "b_ptr", "tl", "triton", "torch", "dtypes", "out_dtype", "lhs",
                      "rhs", "lead", "lhs3", "rhs3", "lhs_strides", "rhs_strides", "n_batch", "n_rows", "n_cols",
                      "n_shared", "out_shape", "epilogue_strides", "out_strides", "largest", "block_m", "block_n",
                      "block_k", "grid", "even_k", "index_64", "upcast", "precision", "name", "tensor",
                      # the kernels' locals before the epilogue (split-K runs the epilogue under a runtime branch,
                      # where a name redefined with another type does not compile) and the wrapper's later locals
                      "rows", "cols", "a_ptrs", "b_ptrs", "pid_m", "pid_n", "n_tiles_m", "n_tiles_n", "tiles_in_group",
                      "first_m", "group_rows", "first", "last", "per_split", "partial_ptrs", "slice_size", "inside",
                      "ticket", "finish", "start", "k_steps", "done", "tile", "sms", "split", "partials", "tickets",
                      "n_cols_b", "by_tma", "lhs_tma", "rhs_tma", "lhs_t", "rhs_t", "programs", "plan", "plan_key",
                      "scalars", "read_as", "where", "ep_sizes", "tma_layouts", "meta", "size_args", "padded",
                      "epilogue_views", "epilogue_read", "lhs_layout", "rhs_layout",
                      # the module's names the wrapper and plan_launch read
                      "launch", "launch_constants", "layout_key", "plan_launch", "padding", "batched", "folds", "pads",
                      "tma_layout", "tma_device", "multiprocessor_count", "launch_sizes", "math", "dataclasses",
                      "functools", "os", "PLANS", "MAX_PLANS", "LaunchPlan", "MAX_BATCH", "DEVICE", "TMA_MIN_FLOPS",
                      "PAD_MIN_FLOPS",
                      "MAX_SPLIT_K", "SPLIT_MIN_STEPS", "PAD_ROWS", "PAD_COLS", "MIN_TILE", "BLOCK_M", "BLOCK_N",
                      "BLOCK_K", "GROUP_M", "NUM_WARPS", "NUM_STAGES", "TensorDescriptor",
                      # the TMA kernel's arguments and plan_launch's TMA names
                      "a_stride", "b_stride", "DEVICE_DESCRIPTORS", "WARP_SPECIALIZE", "TMA_HOST_DESCRIPTORS_MIN_FLOPS",
                      "TWO_PROGRAMS_TILE", "flops", "device_descriptors", "sizes", "per_sm", "descriptor_scratch",
                      "DESCRIPTOR_SCRATCH"})
# Batched products take one batch dim: [batch, M, K] @ [batch, K, N] (either side may be 2-D).
MAX_RANK = 3


class NotMatmulLowerable(ValueError):
    """An operator the matmul engine cannot write; the message says which part."""


@dataclass(frozen=True)
class Operand:
    """One side of the product as the kernel reads it: an input, maybe through a transpose of its last two dims."""

    name: str
    transposed: bool  # read with its last two strides swapped (a view: no copy)


@dataclass(frozen=True)
class EpilogueInput:
    """A tensor the epilogue reads: a row vector over N (a bias), a column over M, or a strided tile."""

    name: str
    kind: EpilogueKind
    positive: bool = False


@dataclass(frozen=True)
class MatmulGraph:
    """A product `a @ b` (b as [K, N]) and the elementwise chain that finishes each output tile."""

    op: str  # matmul, bmm or linear
    a: Operand
    b: Operand
    acc: str  # the name the epilogue calls the product's tile
    epilogue: Lowered
    epilogue_inputs: tuple[EpilogueInput, ...]

    @property
    def plain(self) -> bool:
        """Tell whether the product is stored as it comes: one epilogue line reading no other input."""
        return len(self.epilogue.body) == 1 and not self.epilogue_inputs

    @property
    def stores_product(self) -> bool:
        """Tell whether the epilogue computes nothing on the tile: it stores the product, cast at most."""
        return self.plain and self.epilogue.body[0].partition("=")[2].strip() == self.acc

    @property
    def flattens_rows(self) -> bool:
        """Tell whether the first operand's leading dims are all rows of one product (linear)."""
        return self.op == "linear"


def matmul_graph(spec: OpSpec) -> MatmulGraph:
    """Split the spec's IR into the product and its epilogue (NotMatmulLowerable when it is not of that form)."""
    products = list(dict.fromkeys(e for e in walk(spec.expr)
                                  if isinstance(e, Node) and registry.get(e.op).family == "matmul"))
    if len(products) != 1:
        raise NotMatmulLowerable(f"one matrix product per kernel is written offline; {to_text(spec.expr)} has "
                                 f"{len(products)}")
    product = products[0]
    ranks = {t.name: {len(case[t.name]) for case in spec.shape_cases()} for t in spec.inputs}
    a = _operand(product.args[0], ranks)
    b = _operand(product.args[1], ranks)
    if product.op == "linear":
        b = Operand(b.name, not b.transposed)  # the weight is [N, K]: read as [K, N]
    _check_ranks(product.op, a, b, ranks)
    names = [t.name for t in spec.inputs]
    clashes = sorted(RESERVED & {*names, spec.output, *(p.name for p in spec.params)})
    if clashes:
        raise NotMatmulLowerable(f"{', '.join(clashes)} name variables of the matmul kernel; rename them")
    acc = next(n for n in ("acc", "acc_tile", "product_tile") if n not in {*names, spec.output})
    finished: Expr = Ref(acc)
    if product.op == "linear" and len(product.args) > 2 and product.args[2] is not None:
        finished = Node("add", (finished, product.args[2]))
    try:
        epilogue = lower(replace_node(spec.expr, product, finished), spec.output, names + [acc])
    except NotLowerable as exc:
        raise NotMatmulLowerable(f"the epilogue after the product is not an elementwise chain the offline "
                                 f"generator writes: {exc}") from None
    readers = [e.name for e in walk(replace_node(spec.expr, product, finished)) if isinstance(e, Ref) and e.name != acc]
    for name, view in epilogue.views.items():
        if view.trailing and name in readers:
            raise NotMatmulLowerable(f"{name} is viewed with trailing size-1 dims in the epilogue; give it the "
                                     "output's rank instead")
    positive = positive_inputs(spec.expr)
    inputs = tuple(EpilogueInput(n, _kind(spec, n), n in positive) for n in dict.fromkeys(readers))
    return MatmulGraph(product.op, a, b, acc, epilogue, inputs)


def _operand(expr: Expr, ranks: dict[str, set[int]]) -> Operand:
    """Read one side of the product: an input or the transpose of its last two dims."""
    if isinstance(expr, Ref) and expr.name in ranks:
        return Operand(expr.name, False)
    if isinstance(expr, Node) and expr.op == "transpose" and isinstance(expr.args[0], Ref):
        name = expr.args[0].name
        rank = max(ranks.get(name, {2}))
        dims = {_dim(expr.attr("dim0"), rank), _dim(expr.attr("dim1"), rank)}
        if dims == {rank - 2, rank - 1}:
            return Operand(name, True)
    raise NotMatmulLowerable(f"a product's operands must be inputs or their transposes (last two dims); "
                             f"{to_text(expr)} would need a prologue, which is not written offline yet")


def _dim(value: object, rank: int) -> int:
    dim = int(value) if isinstance(value, int) else int(getattr(value, "value", -99))
    return dim + rank if dim < 0 else dim


def _check_ranks(op: str, a: Operand, b: Operand, ranks: dict[str, set[int]]) -> None:
    """Refuse vectors and more than one batch dim, with the shapes that would work."""
    for side in (a, b):
        found = ranks[side.name]
        if min(found) < 2:
            raise NotMatmulLowerable(f"{side.name} is a vector; the matmul engine writes matrix products "
                                     "(a matrix-vector product is a row reduction: write it as (x * v).sum(-1))")
        if op != "linear" or side is b:
            if max(found) > MAX_RANK:
                raise NotMatmulLowerable(f"{side.name} has {max(found)} dims; batched products with more than one "
                                         "batch dim are not written offline yet (fold them into one)")


def _kind(spec: OpSpec, name: str) -> EpilogueKind:
    """Classify an epilogue input by how it spreads over the output [.., M, N] in every shape case."""
    kinds: set[EpilogueKind] = set()
    for case in spec.shape_cases():
        out = spec.output_shape(case)
        shape = [1] * (len(out) - len(case[name])) + list(case[name])
        if all(d == 1 for d in shape[:-1]) and shape[-1] == out[-1]:
            kinds.add("row")
        elif len(out) >= 2 and shape[-1] == 1 and shape[-2] == out[-2] and all(d == 1 for d in shape[:-2]):
            kinds.add("col")
        else:
            kinds.add("tile")
    return kinds.pop() if len(kinds) == 1 else "tile"


def replace_node(expr: Expr, target: Node, by: Expr) -> Expr:
    """Return expr with every occurrence of target replaced."""
    if expr == target:
        return by
    if not isinstance(expr, Node):
        return expr
    attrs = tuple((k, replace_node(v, target, by) if isinstance(v, Node) else v) for k, v in expr.attrs)
    return Node(expr.op, tuple(replace_node(a, target, by) for a in expr.args), attrs)
