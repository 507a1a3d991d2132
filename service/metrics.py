"""Prometheus metrics of one service instance (its own registry, so tests can make many)."""

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from webgpt.agent.answer import AnswerResult


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "webgpt_requests", "HTTP requests", ["route", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "webgpt_request_seconds",
            "HTTP request latency",
            ["route"],
            registry=self.registry,
            buckets=(0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
        )
        self.episodes = Counter("webgpt_episodes", "episodes run", registry=self.registry)
        self.actions = Counter("webgpt_actions", "browsing actions", registry=self.registry)
        self.pages = Counter("webgpt_pages_fetched", "pages fetched", registry=self.registry)
        self.cache_hits = Counter(
            "webgpt_page_cache_hits", "page loads shared between episodes", registry=self.registry
        )
        self.reward_reloads = Counter(
            "webgpt_reward_reloads",
            "reward versions swapped in (loaded) or refused (corrupt, incompatible, failed)",
            ["outcome"],
            registry=self.registry,
        )
        self.policy_reloads = Counter(
            "webgpt_policy_reloads",
            "policy versions swapped in (loaded) or refused (corrupt, incompatible, "
            "canary_failed, failed)",
            ["outcome"],
            registry=self.registry,
        )
        self.tokens = Counter(
            "webgpt_policy_tokens", "policy tokens", ["kind"], registry=self.registry
        )
        self.answer_records = Counter(
            "webgpt_answer_records",
            "answer records spooled (on disk), replayed (written to the database from the "
            "spool) or dropped (the spool was full)",
            ["outcome"],
            registry=self.registry,
        )
        self.spooled_answers = Gauge(
            "webgpt_answer_spool_records",
            "answer records waiting in the spool for the database",
            registry=self.registry,
        )
        self.idempotent_replays = Counter(
            "webgpt_idempotent_replays",
            "requests answered by joining or replaying an earlier one with the same "
            "Idempotency-Key",
            registry=self.registry,
        )

    def count_policy_reload(self, outcome: str) -> None:
        self.policy_reloads.labels(outcome).inc()

    def count_reward_reload(self, outcome: str) -> None:
        self.reward_reloads.labels(outcome).inc()

    def observe_answer(self, result: AnswerResult) -> None:
        self.episodes.inc(len(result.candidates))
        self.actions.inc(result.usage.actions)
        self.pages.inc(result.usage.pages_fetched)
        self.cache_hits.inc(result.usage.page_cache_hits)
        self.tokens.labels("prompt").inc(result.usage.prompt_tokens)
        self.tokens.labels("completion").inc(result.usage.completion_tokens)

    def render(self) -> bytes:
        return bytes(generate_latest(self.registry))
