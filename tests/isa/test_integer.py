import numpy as np
import pytest
from cases.integer import CASES
from runner import check

import cuport


def test_integer_arithmetic():
    errors = check(CASES, "integer")
    assert not errors, "\n".join(errors[:40])


@pytest.mark.parametrize("body, message", [
    ("sub.u16x2 %r2, %r1, %r1;", "sub.u16x2 does not exist"),
    ("add.sat.u32 %r2, %r1, %r1;", "applies only to add.s32"),
    ("mad.lo.sat.s32 %r2, %r1, %r1, %r1;", "applies only to mad.hi.s32"),
    ("mul.wide.u64 %rd2, %rd1, %rd1;", "only for 16- and 32-bit"),
    ("lop3.b32 %r2, %r1, %r1, %r1, %r1;", "must be an immediate"),
    ("vadd4.u32.u32.u32 %r2, %r1.b0123, %r1, %r1;", "selectors"),
])
def test_forms_that_do_not_exist_are_refused(body, message):
    ptx = f"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry t(.param .u64 o)
{{
  .reg .b32 %r<4>; .reg .b64 %rd<4>;
  mov.u32 %r1, %tid.x;
  cvt.u64.u32 %rd1, %r1;
  {body}
  ret;
}}"""
    with pytest.raises(cuport.BackendError, match=message):
        cuport.Module(ptx).kernel("t")((1, 1, 1), (32, 1, 1), (np.zeros(1, np.uint64),))
