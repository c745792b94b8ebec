import numpy as np
import pytest
from cases.integer import CASES
from runner import check

import cuport


def test_integer_arithmetic():
    errors = check(CASES, "integer")
    assert not errors, "\n".join(errors[:40])


@pytest.mark.parametrize("body, message", [
    # refused by cuport.ptx.validate when the PTX is loaded, in ptxas' words
    ("sub.u16x2 %r2, %r1, %r1;", "Unexpected instruction types specified for 'sub'"),
    ("add.sat.u32 %r2, %r1, %r1;", "Modifier '.sat' does not apply to '.u32' type"),
    ("mad.lo.sat.s32 %r2, %r1, %r1, %r1;", "Illegal modifier '.sat' for instruction 'mad.lo'"),
    ("mul.wide.u64 %rd2, %rd1, %rd1;", "Unexpected instruction types specified for 'mul.wide'"),
    ("lop3.b32 %r2, %r1, %r1, %r1, %r1;", "Arguments mismatch for instruction 'lop3'"),
    # valid PTX that cuport does not translate
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
