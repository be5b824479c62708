"""The Triton helpers the row kernels call: NaN-aware max and min, a product's and logaddexp's combine steps."""

ROW_HELPERS = {
    "_max_nan": '''@triton.jit
def _max_nan(a, b):
    """Return the larger of a and b; NaN wins, as in torch.amax."""
    return tl.where((a > b) | (a != a), a, b)''',
    "_min_nan": '''@triton.jit
def _min_nan(a, b):
    """Return the smaller of a and b; NaN wins, as in torch.amin."""
    return tl.where((a < b) | (a != a), a, b)''',
    "_amax": '''@triton.jit
def _amax(x, axis: tl.constexpr):
    """Return the max of x along axis; NaN wins, as in torch.amax."""
    nans = tl.sum(tl.where(x != x, 1.0, 0.0), axis=axis)
    return tl.where(nans > 0.0, float("nan"), tl.max(x, axis=axis))''',
    "_amin": '''@triton.jit
def _amin(x, axis: tl.constexpr):
    """Return the min of x along axis; NaN wins, as in torch.amin."""
    nans = tl.sum(tl.where(x != x, 1.0, 0.0), axis=axis)
    return tl.where(nans > 0.0, float("nan"), tl.min(x, axis=axis))''',
    "_mul": '''@triton.jit
def _mul(a, b):
    """Multiply (the combine step of a product)."""
    return a * b''',
    "_logaddexp": '''@triton.jit
def _logaddexp(a, b):
    """Return log(exp(a) + exp(b)) without overflow; -inf is the identity and NaN wins."""
    top = tl.maximum(a, b)
    bottom = tl.minimum(a, b)
    merged = tl.where(top == bottom, top + 0.6931471805599453, top + tl.log(1.0 + tl.exp(bottom - top)))
    merged = tl.where(bottom == -float("inf"), top, merged)
    return tl.where(a != a, a, tl.where(b != b, b, merged))''',
}
