import pytest

from tests.browser.goldens import golden_names, golden_path, transcript
from webgpt.browser.workers import RenderWorkers


@pytest.mark.parametrize("name", golden_names())
async def test_observations_match_golden_file(name: str, workers: RenderWorkers) -> None:
    expected = golden_path(name).read_text(encoding="utf-8")
    assert await transcript(name, workers) == expected, f"regenerate with `make goldens` ({name})"


def test_every_golden_page_has_its_golden_file() -> None:
    assert len(golden_names()) >= 3
    for name in golden_names():
        assert golden_path(name).is_file()
