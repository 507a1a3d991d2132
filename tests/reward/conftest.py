from tests.agent.conftest import offline_store

__all__ = ["offline_store"]
