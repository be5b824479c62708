"""What a convolution operator is made of: input, weight, bias, the geometry, and the elementwise epilogue after it."""

from __future__ import annotations

from dataclasses import dataclass

from agent.generators.offline.lowering import Lowered, NotLowerable, lower
from agent.generators.offline.matmul.graph import RESERVED, replace_node
from agent.ir import registry
from agent.ir.expr import Const, Node, Ref, walk
from agent.ir.printer import to_text
from agent.reader.agreement import positive_inputs
from agent.spec import OpSpec

# Names the convolution kernel and wrapper use besides the matmul engine's.
CONV_RESERVED = RESERVED | {"n_img", "n_out", "rows", "pix", "out_p", "out_q", "geometry", "x_view", "w_view",
                            "n_images", "height", "width", "channels", "kernel_h", "kernel_w", "out_h", "out_w",
                            "padding", "pad_h", "pad_w"}


class NotConvLowerable(ValueError):
    """An operator the convolution engine cannot write; the message says which part."""


@dataclass(frozen=True)
class ConvGraph:
    """conv2d(x, w, bias) over NCHW, groups 1, with the elementwise chain that finishes each output tile."""

    x: str
    w: str
    bias: str | None
    stride: tuple[int, int]
    padding: tuple[int, int] | str  # per side, or "same" / "valid"
    dilation: tuple[int, int]
    acc: str
    epilogue: Lowered
    epilogue_inputs: tuple[tuple[str, bool], ...]  # (name, positive): read through the output's strides


def conv_graph(spec: OpSpec) -> ConvGraph:
    """Split the spec's IR into the convolution and its epilogue (NotConvLowerable when it is not of that form)."""
    convs = list(dict.fromkeys(e for e in walk(spec.expr)
                               if isinstance(e, Node) and registry.get(e.op).family == "conv"))
    if len(convs) == 1 and convs[0].op != "conv2d":
        raise NotConvLowerable(f"{convs[0].op} is not written offline yet (the convolution engine writes conv2d)")
    if len(convs) != 1:
        raise NotConvLowerable(f"one conv2d per kernel is written offline; {to_text(spec.expr)} has {len(convs)}")
    conv = convs[0]
    operands = [a for a in conv.args if a is not None]
    if not all(isinstance(a, Ref) for a in operands):
        raise NotConvLowerable("the input, weight and bias of the convolution must be inputs (a prologue is not "
                               "written offline yet)")
    x, w = operands[0].name, operands[1].name  # type: ignore[union-attr]
    bias = operands[2].name if len(operands) > 2 else None  # type: ignore[union-attr]
    if _ints(conv.attr("groups", 1), 1) != (1, 1):
        raise NotConvLowerable("grouped and depthwise convolutions (groups > 1) are not written offline yet")
    for case in spec.shape_cases():
        if len(case[x]) != 4 or len(case[w]) != 4:
            raise NotConvLowerable("conv2d takes a 4-D NCHW input and a 4-D weight here (an unbatched 3-D input is not "
                                   "written offline yet)")
    padding_attr = conv.attr("padding", 0)
    padding_value = padding_attr.value if isinstance(padding_attr, Const) else padding_attr
    padding: tuple[int, int] | str = padding_value if padding_value in ("same", "valid") else _ints(padding_attr, 0)
    names = [t.name for t in spec.inputs]
    clashes = sorted(CONV_RESERVED & {*names, spec.output, *(p.name for p in spec.params)})
    if clashes:
        raise NotConvLowerable(f"{', '.join(clashes)} name variables of the convolution kernel; rename them")
    acc = next(n for n in ("acc", "acc_tile", "conv_tile") if n not in {*names, spec.output})
    finished = replace_node(spec.expr, conv, Ref(acc))
    try:
        epilogue = lower(finished, spec.output, names + [acc])
    except NotLowerable as exc:
        raise NotConvLowerable(f"the epilogue after the convolution is not an elementwise chain the offline generator "
                               f"writes: {exc}") from None
    readers = [e.name for e in walk(finished) if isinstance(e, Ref) and e.name != acc]
    for name in readers:
        if epilogue.views.get(name) and epilogue.views[name].trailing:
            raise NotConvLowerable(f"{name} is viewed with trailing size-1 dims in the epilogue; give it the output's "
                                   "rank instead")
    positive = positive_inputs(spec.expr)
    return ConvGraph(x, w, bias, _ints(conv.attr("stride", 1), 1), padding, _ints(conv.attr("dilation", 1), 1), acc,
                     epilogue, tuple((n, n in positive) for n in dict.fromkeys(readers)))


def _ints(value: object, default: int) -> tuple[int, int]:
    """Read an int or a pair of ints (a stride, padding or dilation) as (height, width)."""
    if isinstance(value, Const):
        value = value.value
    if value is None:
        return default, default
    if isinstance(value, bool) or not isinstance(value, (int, tuple, list)):
        raise NotConvLowerable(f"{value!r} is not an int or a pair of ints")
    if isinstance(value, int):
        return value, value
    pair = tuple(int(v.value if isinstance(v, Const) else v) for v in value)  # type: ignore[arg-type]
    if len(pair) == 1:
        return pair[0], pair[0]
    if len(pair) != 2:
        raise NotConvLowerable(f"{value!r} is not an int or a pair of ints")
    return pair[0], pair[1]
