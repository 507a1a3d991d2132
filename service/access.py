"""Who may call the service, and how often: API keys with roles, a token bucket per key.

WEBGPT_API_KEYS holds comma-separated entries, each `KEY` or `KEY:role+role`:

    k1:answer,k2:answer+label,k3:admin

Roles: `answer` (/answer, /v1/chat/completions), `label` (/feedback, /sessions: what
becomes training data), `admin` (/admin/... routes; implies every role). A bare `KEY` is
`answer` only, so no key writes training data unless it is given `label`. No keys at all
is local-only development mode: one caller, "local", with every role and no rate limit
(`webgpt serve` then refuses any host but loopback).

Every request a key makes takes a token from its bucket (capacity rate_limit_burst,
refilled at rate_limit_per_minute); an empty bucket is a 429 whose Retry-After is the
bucket's own wait. Buckets live in this replica's memory, one per configured key, so
behind several replicas a key's limit is per replica.
"""

import hashlib
import hmac
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

from fastapi import Request

from webgpt.agent.errors import ConfigurationError
from webgpt.service.errors import Forbidden, RateLimited, Unauthorized

Role = Literal["answer", "label", "admin"]
ROLES: tuple[Role, ...] = get_args(Role)
_ROLE_NAMED: dict[str, Role] = {role: role for role in ROLES}
Clock = Callable[[], float]


@dataclass(frozen=True)
class ApiKey:
    """One configured key and its roles."""

    secret: str = field(repr=False)  # never in a log line or a traceback
    roles: frozenset[Role]

    @property
    def fingerprint(self) -> str:
        """What a key is known by in limits and logs: never the key itself."""
        return hashlib.sha256(self.secret.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Caller:
    """Who is calling: a key's fingerprint (or "local") and what it may do."""

    id: str
    roles: frozenset[Role]

    def may(self, role: Role) -> bool:
        return role in self.roles or "admin" in self.roles


LOCAL = Caller("local", frozenset(ROLES))


def parse_keys(text: str) -> list[ApiKey]:
    """The keys of a WEBGPT_API_KEYS value; ConfigurationError for a malformed one.

    A key holds no ',' or ':'. Errors name an entry by its position, never by its text: a
    mistyped separator can put a key where a role belongs, and the message goes to logs."""
    keys: list[ApiKey] = []
    seen: set[str] = set()
    entries = [entry.strip() for entry in text.split(",")]
    for number, entry in enumerate(entries, start=1):
        if not entry:
            continue  # a trailing comma, or nothing configured
        where = f"WEBGPT_API_KEYS entry {number}"
        secret, colon, role_text = entry.partition(":")
        secret = secret.strip()
        if not secret:
            raise ConfigurationError(f"{where} has no key before its roles")
        roles: set[Role] = set()
        if colon:
            for name in role_text.split("+"):
                role = _ROLE_NAMED.get(name.strip())
                if role is None:
                    raise ConfigurationError(
                        f"{where} has an empty or unknown role: roles are {', '.join(ROLES)}, "
                        f"joined by '+' after the key's ':'"
                    )
                roles.add(role)
        else:
            roles.add("answer")  # the secure default: nothing written to training data
        if secret in seen:
            raise ConfigurationError(f"{where} repeats an earlier key")
        seen.add(secret)
        keys.append(ApiKey(secret, frozenset(roles)))
    return keys


class TokenBucket:
    """capacity tokens, refilled at rate per second; each request takes one."""

    def __init__(self, capacity: float, rate: float, now: float) -> None:
        self.capacity = capacity
        self.rate = rate
        self.tokens = capacity
        self.updated = now

    def take(self, now: float) -> float:
        """Take a token: 0.0 when there was one, else the seconds until there will be
        one (and nothing is taken)."""
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        # Refills summed in floats fall a hair short (0.4 + 0.6 < 1.0): still a whole token.
        if self.tokens >= 1.0 - 1e-9:
            self.tokens = max(0.0, self.tokens - 1.0)
            return 0.0
        return (1.0 - self.tokens) / self.rate


class Access:
    """The configured keys and their buckets; authorize and require(role) are the FastAPI
    dependencies the routes use."""

    def __init__(
        self,
        keys: Sequence[ApiKey],
        per_minute: float,
        burst: int,
        clock: Clock = time.monotonic,
    ) -> None:
        self.keys = list(keys)
        self.per_minute = per_minute
        self.burst = burst
        self.clock = clock
        self._secrets = [key.secret.encode() for key in self.keys]
        self._callers = [Caller(key.fingerprint, key.roles) for key in self.keys]
        # One per configured key, made on its first request: only a matched key gets one,
        # so unknown keys cannot grow this.
        self._buckets: dict[str, TokenBucket] = {}

    def identify(self, authorization: str) -> Caller:
        """The caller an Authorization header names; Unauthorized without a valid key."""
        if not self.keys:
            return LOCAL
        scheme, _, token = authorization.partition(" ")
        given = token.strip().encode()
        # Compare with every key in constant time; no early exit reveals which matched.
        matched = [hmac.compare_digest(given, secret) for secret in self._secrets]
        if scheme.lower() != "bearer" or not any(matched):
            raise Unauthorized("a valid API key is needed: Authorization: Bearer <key>")
        return self._callers[matched.index(True)]  # keys are unique: one matched

    def admit(self, caller: Caller) -> None:
        """Take one of the caller's tokens; RateLimited when its bucket is empty."""
        if caller is LOCAL:
            return
        now = self.clock()
        bucket = self._buckets.get(caller.id)
        if bucket is None:
            bucket = self._buckets[caller.id] = TokenBucket(self.burst, self.per_minute / 60.0, now)
        wait = bucket.take(now)
        if wait > 0:
            seconds = max(1, math.ceil(wait))
            raise RateLimited(
                f"this API key is over its rate limit ({self.per_minute:g} a minute, bursts "
                f"of {self.burst}); retry in {seconds} s",
                retry_after_s=seconds,
            )

    async def authorize(self, request: Request) -> Caller:
        """FastAPI dependency: the caller (401 without a valid key), once it has paid a
        token for this request (429 when it has none left)."""
        caller = self.identify(request.headers.get("authorization", ""))
        self.admit(caller)
        return caller

    def require(self, role: Role) -> Callable[[Request], Awaitable[str]]:
        """A FastAPI dependency for routes that need role: the caller's id (what per-key
        limits such as open demonstration sessions count by), after authorize; 403 when
        its key lacks the role."""
        if role not in ROLES:
            raise ValueError(f"no role {role!r}")

        async def dependency(request: Request) -> str:
            caller = await self.authorize(request)
            if not caller.may(role):
                raise Forbidden(f"this API key does not have the {role!r} role")
            return caller.id

        return dependency
