"""Errors raised by the agent package.

Hierarchy::

    AgentError
    ├── PolicyError              the policy server failed
    │   ├── PolicyUnavailable    cannot connect, or marked down after repeated failures
    │   ├── PolicyTimeout        no (complete) answer in time
    │   └── PolicyResponseError  an error status or a malformed / truncated answer
    ├── ConfigurationError       an impossible request (e.g. n > 1 with no scorer)
    ├── ModelError               preparing or serving the local model failed
    ├── DataError                demonstrations or questions that cannot be used
    └── PromotionRefused         the promotion gate found a version worse than the serving one

Browser errors never reach here: the browser turns them into observations.
"""


class AgentError(Exception):
    """Root of every error the agent package raises on purpose."""


class PolicyError(AgentError):
    """The policy server failed."""


class PolicyUnavailable(PolicyError):
    """The policy server cannot be reached."""


class PolicyTimeout(PolicyError):
    """The policy server gave no complete answer in time."""


class PolicyResponseError(PolicyError):
    """The policy server answered with an error status or something malformed."""

    def __init__(
        self, message: str, status_code: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retry_after = retry_after


class ConfigurationError(AgentError):
    """The request cannot be served as configured."""


class ModelError(AgentError):
    """Preparing or serving the local model failed."""


class DataError(AgentError):
    """Demonstration or question files that cannot be read or used."""


class PromotionRefused(AgentError):
    """The promotion gate (agent.promotion) found the candidate worse than the serving
    version by more than the margin; `current` was not moved."""
