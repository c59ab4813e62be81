"""The NumPy target's table of the map ops that are not a plain ufunc call: the code each one
writes for a block (``args`` the operands' code, ``attrs`` the op's attributes, ``shape`` the
code of the block's shape).
"""

from __future__ import annotations

from .common import dtype_code


def _full(args, attrs, shape):
    dtype = attrs["dtype"]
    typed = "" if dtype is None else f", dtype={dtype_code(dtype)}"
    return f"np.full({shape}, {args[0]}{typed})"


NUMPY_CODE = {
    "where": lambda args, attrs, shape: f"np.where({', '.join(args)})",
    # the same conversion as NumPy's astype (a helper of the runtime, numpy_helpers._astype)
    "astype": lambda args, attrs, shape: f"_astype({args[0]}, np.{attrs['dtype'].name})",
    "copy": lambda args, attrs, shape: f"np.copy({args[0]})",
    "full": _full,  # fills the block's region, not the whole array
}

__all__ = ["NUMPY_CODE"]
