from cases.bitops import CASES
from runner import check


def test_bit_manipulation():
    errors = check(CASES, "bitops")
    assert not errors, "\n".join(errors[:40])
