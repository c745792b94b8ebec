from cases.video import CASES
from runner import check


def test_video_instructions():
    errors = check(CASES, "video")
    assert not errors, "\n".join(errors[:40])
