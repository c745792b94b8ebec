from cases.half import CASES
from runner import check


def test_half():
    errors = check(CASES, "half")
    assert not errors, "\n".join(errors[:60])
