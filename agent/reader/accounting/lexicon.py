"""The accounting pass's own words: built from the catalogue and the IR registry, never from the reader's finders.

Each phrase maps to the IR ops that would show it was used. A phrase found in the text whose ops are all absent
from the reading was dropped; the pass then asks instead of letting the job verify a misreading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cache

from agent.catalogue import load_catalogue
from agent.ir import registry

# What an op's name in prose also covers: a reading that computes the key shows the words of the value were used
# (a softmax is an exp, a sum and a divide; a norm takes a mean). Read from the ops' PyTorch definitions.
IMPLIED: dict[str, set[str]] = {
    "softmax": {"exp", "sum", "div", "max", "amax", "normalize"},
    "log_softmax": {"exp", "sum", "log", "softmax", "logsumexp", "max", "amax", "sub"},
    "logsumexp": {"exp", "sum", "log", "max", "amax"},
    "logcumsumexp": {"exp", "cumsum", "log"},
    "softmin": {"exp", "sum", "div", "neg", "min"},
    "cross_entropy": {"log_softmax", "softmax", "log", "exp", "sum", "mean", "nll_loss", "logsumexp"},
    "nll_loss": {"mean", "sum", "neg", "log"},
    "binary_cross_entropy_with_logits": {"sigmoid", "log", "mean", "logsigmoid"},
    "mse_loss": {"square", "pow", "sub", "mean", "sum"},
    "l1_loss": {"abs", "sub", "mean", "sum"},
    "smooth_l1_loss": {"abs", "sub", "mean", "square"},
    "huber_loss": {"abs", "sub", "mean", "square"},
    "kl_div": {"log", "mean", "sum", "mul", "sub"},
    "cosine_similarity": {"vector_norm", "norm", "sum", "mul", "div", "dot"},
    "layer_norm": {"mean", "var", "sub", "div", "sqrt", "rsqrt", "mul", "add", "std"},
    "rms_norm": {"mean", "square", "pow", "sqrt", "rsqrt", "mul", "div"},
    "group_norm": {"mean", "var", "sub", "div", "sqrt", "rsqrt", "mul", "add"},
    "batch_norm": {"mean", "var", "sub", "div", "sqrt", "rsqrt", "mul", "add"},
    "instance_norm": {"mean", "var", "sub", "div", "sqrt", "rsqrt", "mul", "add"},
    "normalize": {"vector_norm", "norm", "div", "sqrt", "sum", "square", "max", "clamp"},
    "var": {"mean", "sub", "square", "pow", "sum"},
    "std": {"var", "mean", "sub", "square", "sqrt", "sum"},
    "vector_norm": {"sqrt", "sum", "square", "pow", "abs"},
    "mean": {"sum", "div"},
    "matmul": {"mul", "sum", "dot", "mm", "add"},
    "bmm": {"matmul", "mul", "sum", "mm"},
    "linear": {"matmul", "mul", "sum", "add", "transpose", "mm", "addmm"},
    "addmm": {"matmul", "mul", "sum", "add", "mm"},
    "scaled_dot_product_attention": {"softmax", "matmul", "exp", "sum", "div", "mul", "transpose", "bmm", "sqrt"},
    "conv1d": {"mul", "sum", "add"},
    "conv2d": {"mul", "sum", "add"},
    "conv3d": {"mul", "sum", "add"},
    "relu": {"max", "maximum", "clamp", "where"},
    "relu6": {"relu", "min", "max", "clamp", "minimum", "maximum"},
    "leaky_relu": {"max", "min", "where", "mul", "relu"},
    "hardtanh": {"clamp", "min", "max"},
    "hardsigmoid": {"clamp", "relu6", "div", "add"},
    "hardswish": {"clamp", "relu6", "mul", "div", "hardsigmoid"},
    "clamp": {"max", "min", "maximum", "minimum"},
    "sigmoid": {"exp", "div", "reciprocal", "add", "neg"},
    "logsigmoid": {"log", "sigmoid", "exp"},
    "silu": {"sigmoid", "mul", "exp"},
    "gelu": {"erf", "tanh", "mul", "sqrt", "add", "pow"},
    "elu": {"exp", "where", "sub", "mul"},
    "celu": {"exp", "where", "sub", "mul", "div"},
    "selu": {"exp", "where", "mul", "elu"},
    "softplus": {"exp", "log", "log1p", "add"},
    "mish": {"tanh", "softplus", "mul", "exp", "log"},
    "tanh": {"exp"},
    "tanhshrink": {"tanh", "sub"},
    "rsqrt": {"sqrt", "reciprocal", "div"},
    "reciprocal": {"div"},
    "sub": {"neg", "add"},
    "square": {"pow", "mul"},
    "pow": {"square", "mul", "sqrt"},
    "where": {"mask", "masked_fill"},
    "cumsum": {"sum", "add"},
    "cumprod": {"prod", "mul"},
    "cummax": {"max"},
    "cummin": {"min"},
    "amax": {"max"},
    "amin": {"min"},
    "argmax": {"max"},
    "argmin": {"min"},
    "expm1": {"exp", "sub"},
    "log1p": {"log", "add"},
    "exp2": {"exp", "pow"},
    "log2": {"log"},
    "log10": {"log"},
    "embedding": {"gather", "index_select"},
    "index_select": {"gather"},
    "gather": {"index_select"},
}
# Reduction modes and flag values in the IR's attributes that name an op in prose ("mean over the batch").
ATTR_WORDS = {"mean": "mean", "sum": "sum", "tanh": "tanh"}

# Special functions the catalogue has no entry for, by the words people use; each maps to the torch ops that
# compute it. Their words never fall back to a shorter name inside them ("arcsine" is not "sine").
SPECIAL_FUNCTIONS: dict[str, tuple[str, ...]] = {
    "arcsine": ("asin",), "arc sine": ("asin",), "inverse sine": ("asin",), "asin": ("asin",),
    "arcsin": ("asin",), "arccosine": ("acos",), "arc cosine": ("acos",), "inverse cosine": ("acos",),
    "acos": ("acos",), "arccos": ("acos",), "arctangent": ("atan", "atan2"), "arc tangent": ("atan", "atan2"),
    "inverse tangent": ("atan", "atan2"), "atan": ("atan",), "arctan": ("atan",), "atan2": ("atan2",),
    "hyperbolic sine": ("sinh",), "sinh": ("sinh",), "hyperbolic cosine": ("cosh",), "cosh": ("cosh",),
    "asinh": ("asinh",), "acosh": ("acosh",), "atanh": ("atanh",), "inverse hyperbolic": ("asinh", "acosh", "atanh"),
    "gamma function": ("lgamma", "gamma"), "log gamma": ("lgamma",), "lgamma": ("lgamma",),
    "gammaln": ("lgamma",), "digamma": ("digamma",), "psi function": ("digamma",), "polygamma": ("polygamma",),
    "trigamma": ("polygamma",), "beta function": ("beta",), "zeta": ("zeta",), "zeta function": ("zeta",),
    "hurwitz": ("zeta",), "riemann": ("zeta",), "erfinv": ("erfinv",), "inverse error function": ("erfinv",),
    "erfcx": ("erfcx",), "bessel": ("bessel",),
    # the n - 1 of a sample variance, not a Bessel function
    "bessel's correction": ("std", "var", "std_mean", "var_mean"), "bessel correction": ("std", "var", "std_mean",
                                                                                          "var_mean"),
    # a second output of indices beside the values ("along with the index location of each minimum value")
    "index location": ("argmin", "argmax", "topk", "sort"), "namedtuple": ("argmin", "argmax", "topk", "sort"),
    "i0": ("i0",), "i0e": ("i0e",), "i1": ("i1",), "i1e": ("i1e",), "modified bessel": ("i0", "i1"),
    "airy": ("airy_ai",), "chebyshev": ("chebyshev_polynomial_t",), "hermite": ("hermite",),
    "legendre": ("legendre",), "laguerre": ("laguerre",), "logit": ("logit",), "sinc": ("sinc",),
    "xlogy": ("xlogy",), "xlog1py": ("xlog1py",), "entr": ("entr",), "entropy": ("entr", "cross_entropy"),
    "ndtr": ("ndtr",), "ndtri": ("ndtri",), "log_ndtr": ("log_ndtr",),
    "signbit": ("signbit",), "sign bit": ("signbit",), "trunc": ("trunc",), "truncate": ("trunc",),
    "truncation": ("trunc",), "frac": ("frac",), "fractional part": ("frac",), "fmod": ("fmod",),
    "remainder": ("remainder", "fmod"), "modulo": ("remainder", "fmod"), "hypot": ("hypot",),
    "lerp": ("lerp",), "heaviside": ("heaviside",),
    "bitwise": ("bitwise",), "determinant": ("det",), "eigenvalue": ("eig",), "eigenvalues": ("eig",),
    "eigendecomposition": ("eig",), "cholesky": ("cholesky",), "qr decomposition": ("qr",),
    "lu decomposition": ("lu",), "svd": ("svd",), "singular value": ("svd",), "pseudoinverse": ("pinv",),
    "fft": ("fft",), "fourier": ("fft",), "pixel shuffle": ("pixel_shuffle",), "pixel_shuffle": ("pixel_shuffle",),
    "repeat interleave": ("repeat_interleave",), "repeat_interleave": ("repeat_interleave",),
    "tile": ("tile", "repeat"), "tiling": ("tile", "repeat"),
    "pooling": ("pool",), "max pool": ("pool",), "avg pool": ("pool",), "average pool": ("pool",),
    "max_pool2d": ("pool",), "avg_pool2d": ("pool",), "dropout": ("dropout",),
    "upsample": ("interpolate",), "grid sample": ("grid_sample",), "affine grid": ("affine_grid",),
    "outer product": ("outer", "mul"), "kronecker": ("kron",), "diagonal": ("diag",),
    "triangular": ("tril", "triu"), "tril": ("tril",), "triu": ("triu",), "histogram": ("histc",),
    "sort": ("sort",), "sorted": ("sort",), "topk": ("topk",), "top k": ("topk",), "median": ("median",),
    "quantile": ("quantile",), "nonzero": ("nonzero",),
    "quantize": ("quantize",), "quantization": ("quantize",), "dequantize": ("dequantize",),
}

# Modifiers: words that change what an op computes. Each needs one of the listed ops in the reading.
MODIFIERS: dict[str, tuple[str, ...]] = {
    "transposed": ("transpose", "permute", "linear", "mT", "t"),
    "transpose of": ("transpose", "permute", "linear", "mT", "t"),
    "reversed": ("flip",), "reverse": ("flip",), "reverse order": ("flip",), "flipped": ("flip",),
    "exclusive": ("sub", "cat", "pad", "roll"),
    "cumulative": ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"),
    "masked": ("where", "masked_fill", "mul", "nll_loss", "cross_entropy"),
    "negated": ("neg", "sub", "mul"),
    "inverse of": ("reciprocal", "div", "pow", "rsqrt", "inverse"),
    "log of": ("log", "log2", "log10", "log1p", "log_softmax", "logsumexp", "logsigmoid", "logcumsumexp"),
    "logarithm of": ("log", "log2", "log10", "log1p", "log_softmax", "logsumexp", "logsigmoid"),
    "absolute": ("abs", "l1_loss", "smooth_l1_loss", "huber_loss", "vector_norm"),
    "squared": ("square", "pow", "mul", "mse_loss", "var", "vector_norm", "rms_norm"),
}

# Quantities: a word that, said at all, changes the computation; a reading must use it (or the text must give
# its value so the reading can). Each maps to the parameter names an op or the reading would carry it under.
QUANTITIES: dict[str, tuple[str, ...]] = {
    "temperature": ("temperature", "tau", "t"),
    "label smoothing": ("label_smoothing",), "label_smoothing": ("label_smoothing",),
    "ignore index": ("ignore_index",), "ignore_index": ("ignore_index",),
    "negative slope": ("negative_slope",), "negative_slope": ("negative_slope",),
    "causal": ("is_causal", "causal"), "is_causal": ("is_causal",),
}

# `name = value` names that belong to the job, not the operator: read by other parts of the reader.
JOB_FIELDS = {
    "rtol", "atol", "tol", "tolerance", "rounds", "round", "speedup", "target", "seed", "device", "warmup",
    "repeat", "iters", "iterations", "grid", "block", "block_size", "num_warps", "num_stages", "out", "inplace",
    "training", "out_dtype", "dtype", "layout", "memory_format", "requires_grad", "generator", "pin_memory",
}


# Ops a reading may compute an op with, when it writes the op out (`x @ w.T + b` for linear); entries with a
# catalogue `check` get theirs from it.
EXPANSIONS: dict[str, tuple[frozenset[str], ...]] = {
    "linear": (frozenset({"matmul"}),), "bmm": (frozenset({"matmul"}),), "matmul": (frozenset({"bmm"}),),
    "addmm": (frozenset({"matmul", "add"}),), "sub": (frozenset({"add", "neg"}),),
}
# Words that are prose far more often than an operation's name ("where x > 0", "optimization rounds").
PROSE_WORDS = {"where", "round", "rounds", "opposite", "join", "convert", "conversion", "difference", "ratio",
               "projection", "magnitude", "modulus", "product", "power", "cast", "form", "sign", "min", "max"}


@dataclass(frozen=True)
class Phrase:
    """A phrase of the lexicon: its words, and the ops any one of which shows the reading used it."""

    words: tuple[str, ...]
    ops: frozenset[str]
    kind: str  # "operation" | "special" | "modifier"
    expansions: tuple[frozenset[str], ...] = ()  # op sets that, all present, compute it too


def words_of(text: str) -> tuple[str, ...]:
    """Split text into lower-case match words (ASCII words with digits; '-' and '_' split words)."""
    return tuple(re.findall(r"[a-z][a-z0-9]*|[0-9]+[a-z]+[0-9]*", text.lower().replace("_", " ").replace("-", " ")))


@cache
def phrases() -> tuple[Phrase, ...]:
    """Every phrase of the lexicon, longest first (a longer phrase wins where two overlap)."""
    found: dict[tuple[str, ...], Phrase] = {}
    catalogue = load_catalogue()
    for entry in catalogue.entries:
        ops = {entry.op} if entry.op else set(formula_ops(entry.formula or ""))
        ops |= {entry.name}
        expansions = [*EXPANSIONS.get(entry.op or entry.name, ())]
        if entry.check:
            expansions.append(frozenset(formula_ops(entry.check)))
        for alias in (entry.name, *entry.aliases):
            key = words_of(alias)
            if not key or _cjk(alias) or not re.fullmatch(r"[A-Za-z0-9 _\-.]+", alias) or key in {("x",)}:
                continue  # a formula-like alias (`exp(x) - 1`) is read as a formula, not as words
            if len(key) == 1 and key[0] in PROSE_WORDS:
                continue
            earlier = found.get(key)
            merged = ops | (set(earlier.ops) if earlier else set())
            found[key] = Phrase(key, frozenset(merged), "operation", tuple(expansions))
    for op in registry.all_ops():
        key = words_of(op.name)
        if key and key not in found and not (len(key) == 1 and key[0] in PROSE_WORDS):
            found[key] = Phrase(key, frozenset({op.name}), "operation", EXPANSIONS.get(op.name, ()))
    for phrase, special in SPECIAL_FUNCTIONS.items():
        key = words_of(phrase)
        if key not in found:  # the catalogue's own entry wins (a special function it learns later)
            found[key] = Phrase(key, frozenset(special), "special")
    for phrase, needs in MODIFIERS.items():
        key = words_of(phrase)
        found.setdefault(key, Phrase(key, frozenset(needs), "modifier"))
    # The bare verb "normalizes" (as in "this normalizes the input, then applies SiLU") says what any normalization
    # does: a batch, layer, group, instance or RMS norm in the reading accounts for it.
    norms = frozenset(op.name for op in registry.all_ops() if op.family == "norm")
    for key in (("normalize",), ("normalizes",), ("normalise",), ("normalization",), ("normalisation",)):
        if key in found:
            found[key] = replace(found[key], ops=found[key].ops | norms)
    return tuple(sorted(found.values(), key=lambda p: -len(p.words)))


@cache
def parameter_names() -> frozenset[str]:
    """Every parameter name an op or a catalogue entry takes, and the words people say for them."""
    names: set[str] = set()
    for op in registry.all_ops():
        names |= {p.name for p in op.attributes} | {a for p in op.attributes for a in p.aliases}
    for entry in load_catalogue().entries:
        for param in entry.params:
            names.add(param.name)
            names |= {"_".join(words_of(s)) for s in param.say if not _cjk(s) and words_of(s)}
    return frozenset(n for n in names if n)


_INFIX = {"+": "add", "-": "sub", "*": "mul", "/": "div", "@": "matmul", "**": "pow"}


def formula_ops(formula: str) -> list[str]:
    """Return the IR ops a catalogue formula or check uses, calls and infix operators alike."""
    from agent.ir.expr import Node, walk
    from agent.ir.parse import parse_text
    from agent.ir.types import IRError

    try:
        return list(dict.fromkeys(n.op for n in walk(parse_text(formula)) if isinstance(n, Node)))
    except (IRError, SyntaxError, ValueError):
        pass  # a template with placeholders: its calls and operators, read from the text
    known = {op.name for op in registry.all_ops()}
    calls = [w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*(?=\s*\()", formula) if w in known]
    infix = [_INFIX[o] for o in re.findall(r"\*\*|[-+*/@](?![-+*/@])", formula) if o in _INFIX]
    return list(dict.fromkeys(calls + infix))


def _cjk(text: str) -> bool:
    return bool(re.search(r"[\u3400-\u9fff]", text))
