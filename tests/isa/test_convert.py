from cases.convert import CASES
from runner import check


def test_convert():
    errors = check(CASES, "convert")
    assert not errors, "\n".join(errors[:60])
