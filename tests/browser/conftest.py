from collections.abc import Iterator

import pytest

from webgpt.browser.workers import RenderWorkers


@pytest.fixture(scope="session")
def workers() -> Iterator[RenderWorkers]:
    """One render worker shared by the browser tests (its start-up costs ~0.5 s)."""
    pool = RenderWorkers(size=1)
    yield pool
    pool.close()
