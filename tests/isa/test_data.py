from cases.data import CASES
from runner import check


def test_mov():
    errors = check(CASES, "data")
    assert not errors, "\n".join(errors[:40])
