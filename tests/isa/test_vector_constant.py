"""isa/types.vector_constant: one llvmlite Constant per distinct lane vector (its text is
written once per object), and never one object for two constants whose bits differ."""

from __future__ import annotations

import math

from llvmlite import ir as ll

from cuport.isa.types import I32, vector_constant

F32 = ll.FloatType()
F64 = ll.DoubleType()


def test_equal_constants_are_one_object() -> None:
    a = vector_constant(I32, [7] * 32)
    assert vector_constant(I32, [7] * 32) is a
    assert vector_constant(I32, list(range(32))) is not a
    assert vector_constant(I32, [7] * 8, 8) is not a  # another width
    assert vector_constant(ll.IntType(64), [7] * 32) is not a  # another element type
    assert str(a) == "<32 x i32> <" + ", ".join(["i32 7"] * 32) + ">"


def test_float_constants_are_told_apart_by_bits() -> None:
    """-0.0 == 0.0 and NaN != NaN in Python: keyed by value, a splat of -0.0 would have come
    out as +0.0 (a different answer of, e.g., a multiply's sign) and NaNs never shared."""
    for t in (F32, F64):
        pos, neg = vector_constant(t, [0.0] * 32), vector_constant(t, [-0.0] * 32)
        assert pos is not neg
        assert str(pos) != str(neg)
        assert vector_constant(t, [-0.0] * 32) is neg
        nan = vector_constant(t, [math.nan] * 32)
        assert vector_constant(t, [math.nan] * 32) is nan


def test_zero_and_undef_vectors() -> None:
    z = vector_constant(I32, None)
    u = vector_constant(I32, ll.Undefined)
    assert z is vector_constant(I32, None) and u is vector_constant(I32, ll.Undefined)
    assert str(z) == str(ll.Constant(ll.VectorType(I32, 32), None))
    assert str(u) == str(ll.Constant(ll.VectorType(I32, 32), ll.Undefined))
    assert z is not u
