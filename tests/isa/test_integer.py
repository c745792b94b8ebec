from cases.integer import CASES
from runner import check


def test_integer_arithmetic():
    errors = check(CASES, "integer")
    assert not errors, "\n".join(errors[:40])
