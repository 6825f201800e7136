"""Arrays with named axes: the factor algebra of the estimator.

A factor lives on the cells of a clique, one axis per attribute, the axes always in the
domain's order; so a factor on a subset of another's attributes broadcasts against it by
a reshape alone, and a marginal is a sum over the other axes (Koller & Friedman 2009,
ch. 10; McKenna, Sheldon & Miklau 2019, sec. 4).
"""

from __future__ import annotations

import string
from collections.abc import Sequence

import numpy as np

from dpevolve.measurements import Clique


def positions(within: Clique, attrs: Sequence[str]) -> tuple[int, ...]:
    """Axes of ``within`` that carry ``attrs`` (each must be present)."""
    return tuple(within.index(a) for a in attrs)


def broadcast_shape(values: np.ndarray, attrs: Clique, target: Clique) -> np.ndarray:
    """``values`` on ``attrs`` reshaped to broadcast against an array on ``target``.

    ``attrs`` must be a subsequence of ``target`` (both in domain order): the axes
    then already come in the right order and missing ones become length 1.
    """
    shape = [1] * len(target)
    last = -1
    for attr, size in zip(attrs, values.shape, strict=True):
        axis = target.index(attr)
        if axis <= last:
            raise ValueError("factor axes must follow the domain order")
        shape[axis] = size
        last = axis
    return values.reshape(shape)


def combine_into(
    ufunc: np.ufunc, target: np.ndarray, target_attrs: Clique, values: np.ndarray, attrs: Clique
) -> None:
    """``target = ufunc(target, values)`` in place, ``values`` on a subsequence ``attrs``
    of ``target_attrs`` broadcast over the rest.

    Neighbouring axes of one kind (in ``attrs`` or not) are merged first, so numpy
    broadcasts over a few long axes rather than many short interleaved ones.
    """
    if not target.flags.c_contiguous:
        raise ValueError("combine_into needs a contiguous target")
    present = [a in attrs for a in target_attrs]
    blocks, kinds = _blocks(target.shape, present)
    view = target.reshape(blocks)
    shaped = broadcast_shape(values, attrs, target_attrs).reshape(
        [b if k else 1 for b, k in zip(blocks, kinds, strict=True)]
    )
    ufunc(view, shaped, out=view)


def _blocks(shape: tuple[int, ...], kept: list[bool]) -> tuple[list[int], list[bool]]:
    """Merge neighbouring axes of the same kind (kept or summed): a free reshape."""
    blocks: list[int] = []
    kinds: list[bool] = []
    for size, k in zip(shape, kept, strict=True):
        if kinds and kinds[-1] == k:
            blocks[-1] *= size
        else:
            blocks.append(size)
            kinds.append(k)
    return blocks, kinds


def sum_to(
    values: np.ndarray, attrs: Clique, keep: Clique, *, keepdims: bool = False
) -> np.ndarray:
    """``values`` on ``attrs`` summed down to ``keep`` (a subsequence of ``attrs``).

    Neighbouring axes of one kind are merged (a free reshape), then the summed blocks go
    one at a time, the largest first, so the first pass shrinks the array most and
    every pass is a single-axis sum, a few nanoseconds per cell where numpy's own
    multi-axis sum over interleaved axes takes up to ten times longer.
    """
    kept = [a in keep for a in attrs]
    if all(kept):
        return values
    blocks, kinds = _blocks(values.shape, kept)
    summed = np.ascontiguousarray(values).reshape(blocks)
    for axis in sorted((i for i, k in enumerate(kinds) if not k), key=lambda i: -blocks[i]):
        summed = np.expand_dims(_sum_axis(summed, axis), axis)
    if keepdims:
        return summed.reshape([s if k else 1 for s, k in zip(values.shape, kept, strict=True)])
    return summed.reshape([s for s, k in zip(values.shape, kept, strict=True) if k])


# A short last axis is summed slice by slice (strided adds): a reduction along it would
# pay numpy's per-output overhead.
SHORT_AXIS = 16


def _sum_axis(values: np.ndarray, axis: int) -> np.ndarray:
    if axis == values.ndim - 1 and values.shape[axis] <= SHORT_AXIS:
        out = values[..., 0].copy()
        for j in range(1, values.shape[axis]):
            out += values[..., j]
        return out
    letters = string.ascii_letters[: values.ndim]
    return np.einsum(f"{letters}->{letters.replace(letters[axis], '')}", values)
