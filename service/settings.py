"""Service settings: every field is also a WEBGPT_* variable (infra.settings: how they are read)."""

import ipaddress
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, SecretStr, field_validator

from webgpt.agent.answerability import load_answerability
from webgpt.agent.episode import MAX_EXPLANATION_QUOTES
from webgpt.agent.model import DEFAULT_QUOTE_RANKER, DEFAULT_REWARD
from webgpt.agent.question_kind import SHIPPED as SHIPPED_QUESTION_KIND
from webgpt.agent.question_kind import load_question_kind
from webgpt.browser.web import WebSettings
from webgpt.infra.settings import Settings, webgpt_home
from webgpt.service.access import ApiKey, parse_keys

if TYPE_CHECKING:
    from webgpt.agent.episode import EpisodeConfig

_HOSTNAME = re.compile(
    r"(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*"
)


class ServiceSettings(Settings):
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)

    @field_validator("host")
    @classmethod
    def _an_address_or_a_hostname(cls, host: str) -> str:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            if not _HOSTNAME.fullmatch(host):
                raise ValueError(f"{host!r} is neither an IP address nor a hostname") from None
        return host

    engine: str = "offline"
    policy_url: str | None = None  # None: the local vLLM server of the embedded default
    policy_model: str | None = None
    policy_key: SecretStr | None = None
    # The policy's format (agent.targets.policy_client): the trained default's completion
    # format, or a chat model's tool calls at policy_url (docs/agent.md, "Bring your own
    # model"), whose episodes run unguided.
    policy_format: Literal["completion", "chat"] = "completion"
    # A policy registry alias (registry/policy/current, agent.registry) whose version, a LoRA
    # adapter, the service serves and follows (service.policies): loaded at run time into the
    # vLLM server at policy_url, whose policy_model is then the adapters' base; without
    # policy_url, into a local vLLM server of that base that the service starts.
    policy_checkpoint: Path | None = None
    policy_reload_s: float = Field(default=10.0, ge=0)  # how often to re-resolve it; 0: never
    # The largest LoRA rank the service's own vLLM accepts (--max-lora-rank). vLLM's CPU
    # build pays for this rank on every prompt token, whatever the adapter's rank: 64
    # made a 1,500-token prefill 104 s here, 16 (what `webgpt train` writes) 31 s.
    policy_max_lora_rank: Literal[8, 16, 32, 64, 128, 256] = 16
    # CPU build: the cores (VLLM_CPU_OMP_THREADS_BIND syntax, "1" or "8-15") of the second
    # vLLM a full-weight version is started in beside the serving one; never the serving
    # worker's cores. None: the one CPU the serving worker leaves free, and for a version
    # launched while another launched one serves, the serving worker's (launch_cpu_binds).
    policy_launch_cpus: str | None = Field(default=None, pattern=r"^\d+(-\d+)?([,|]\d+(-\d+)?)*$")
    # CUDA build (the CPU build ignores them): the share of a GPU's memory (vLLM's
    # --gpu-memory-utilization) of the vLLM the service starts for policy_checkpoint, and of
    # each full-weight version's vLLM launched beside it, on policy_launch_gpus
    # (CUDA_VISIBLE_DEVICES; None: the serving one's GPU). A swap between two full-weight
    # versions holds the serving vLLM and two launched ones at once, so on one GPU
    # serving + 2 x launch may be at most 0.9, checked at start (service.policies); on two,
    # 0.9 serving and 0.45 launched on "1". A launch share of 0 starts no second vLLM:
    # full-weight versions are refused, and the serving one may take 0.9 (docs/deploy.md).
    policy_gpu_memory_share: float = Field(default=0.3, gt=0, le=1)
    policy_launch_gpu_memory_share: float = Field(default=0.3, ge=0, le=1)
    policy_launch_gpus: str | None = Field(default=None, pattern=r"^[\w/-]+(,[\w/-]+)*$")
    # Questions a new version must answer (cited, no refused command) before it serves.
    policy_canaries: list[str] = Field(
        default_factory=lambda: ["Who wrote the novel Pride and Prejudice?"]
    )
    # The answer rules of guided decoding (agent.episode.EpisodeConfig): quotes a how/why
    # question collects and cites (1: as any question), and declines of questions naming
    # what no quote shows.
    explanation_quotes: int = Field(default=3, ge=1, le=MAX_EXPLANATION_QUOTES)
    # What reads whether a question asks how or why (agent.question_kind): a folder of
    # `webgpt train question-kind`, the shipped model by default.
    question_kind: Path = SHIPPED_QUESTION_KIND
    grounded_declines: bool = True
    # Declines by answerability (agent.episode.EpisodeConfig.answerability; docs/agent.md,
    # "Declines by answerability"): a folder of `webgpt train answerability`, whose model
    # judges from the collected quotes whether to answer or decline, in place of the
    # grounded declines; `none`: off. Its word rarities come from the offline web
    # (WEBGPT_OFFLINE_STORE, else the built one).
    answerability: str = "none"
    # Declines by evidence (agent.episode.EpisodeConfig.evidence_declines): with a quote
    # ranker trained with decline rows, decline where it scores no collected quote above
    # the decline by more than its margin (chosen on dev, recorded in its checkpoint;
    # evidence_margin overrides it), else answer with citations (docs/agent.md, "Declines
    # by evidence").
    evidence_declines: bool = True
    evidence_margin: float | None = None
    # The decline judgment (agent.episode.EpisodeConfig.decline_judge): a reward checkpoint
    # folder that scores each drafted answer beside the decline from the same quotes, loaded
    # in the service's process at start; None: off. The decline is served where it passes
    # the answer by more than judge_margin. Off by default: the one trained so far declines
    # more answerable questions than the grounded declines (docs/agent.md).
    decline_judge: Path | None = None
    judge_margin: float = 0.0
    # The quote ranker (agent.episode.EpisodeConfig.quote_ranker; docs/agent.md, "Learned
    # quote choice"): `default`, the shipped one (prepared at start where it is not yet), or
    # a reward checkpoint folder trained on quote comparisons, loaded in the service's
    # process at start; `none`: off. A Quote for a question asking for no explanation takes
    # only the relevant_quotes sentences in view it scores highest, or of the whole page
    # from the view the page opened at (0: any in view).
    quote_ranker: Path | None = Path(DEFAULT_QUOTE_RANKER)
    # Set: the quote ranker scores on this vLLM pooling server (reward.remote, no torch in
    # the service), which serves the checkpoint quote_ranker names under its version;
    # only that checkpoint's manifest is read here.
    quote_ranker_url: str | None = None
    quote_ranker_key: SecretStr | None = None
    relevant_quotes: int = Field(default=1, ge=0, le=100)
    # docs/questions.md, "The question's own search", on by default: an episode's first
    # Search is the question's own words.
    question_search: bool = True
    # The reward model that picks the best of a request's episodes when it asks for more
    # than one (n on /answer, the SDK and the page; best_of on MCP and the OpenAI route):
    # `default`, the shipped one, prepared and loaded by the first request that needs it,
    # then followed through registry/reward/current; a checkpoint folder or registry
    # alias, loaded at start and followed; `none`: best-of-n is off (n must be 1).
    reward_model: Path | None = Path(DEFAULT_REWARD)

    @field_validator("reward_model", "decline_judge", "quote_ranker", mode="before")
    @classmethod
    def _none_turns_it_off(cls, value: object) -> object:
        return None if isinstance(value, str) and value.strip().lower() == "none" else value

    # Set: the reward model runs on this vLLM pooling server (reward.remote), and
    # reward_model names its checkpoint folder, of which only the manifest is read.
    reward_url: str | None = None
    reward_key: SecretStr | None = None
    # How often to re-resolve reward_model (an alias like registry/reward/current) and swap
    # in the version it names (service.scoring); 0: never.
    reward_reload_s: float = Field(default=10.0, ge=0)
    # Bearer keys and their roles (service.access): comma-separated `KEY` or `KEY:role+role`
    # entries, roles answer, label and admin; a bare KEY may only answer. None configured =
    # local-only development mode: the service refuses to listen on anything but loopback.
    api_keys: SecretStr = SecretStr("")
    # Each key's token bucket: this many requests a minute, bursts of up to burst at once.
    rate_limit_per_minute: float = Field(default=120.0, gt=0)
    rate_limit_burst: int = Field(default=60, ge=1)
    max_concurrent_requests: int = Field(default=8, ge=1)  # answers computed at once
    max_waiting_requests: int = Field(default=32, ge=0)  # beyond this, 429 with Retry-After
    max_request_bytes: int = Field(default=64 * 1024, ge=1024)
    max_question_chars: int = Field(default=2000, ge=10)
    max_n: int = Field(default=16, ge=1)
    max_actions_limit: int = Field(default=200, ge=1)
    retry_after_s: int = Field(default=5, ge=1)
    # People recording demonstrations in the page's Demonstrate mode (service.demonstrating):
    # open browser sessions per API key and in all, and how long one may sit idle.
    max_demo_sessions_per_key: int = Field(default=4, ge=1)
    max_demo_sessions: int = Field(default=64, ge=1)
    demo_session_idle_s: float = Field(default=1800.0, gt=0)
    # Agent hosts browsing through our MCP tools (service.mcp_server): their browser
    # sessions per API key and in all, and how long one may sit idle.
    max_mcp_sessions_per_key: int = Field(default=8, ge=1)
    max_mcp_sessions: int = Field(default=128, ge=1)
    mcp_session_idle_s: float = Field(default=600.0, gt=0)
    # A questions JSONL (evals.questions: question, gold_answers, split, ...) that people
    # demonstrate in turn; each record keeps its gold answers and split.
    demo_questions: Path | None = None
    # Where answers and feedback are stored (service.store): a PostgreSQL URL shared by
    # every replica, or else the SQLite file feedback_db ($WEBGPT_HOME/feedback.sqlite).
    database_url: SecretStr | None = None
    feedback_db: Path | None = None
    # Answer records reach the database through this local file (service.recording), so an
    # answer never waits on the database: fsynced on append, replayed when the database
    # answers, at most this many bytes pending (beyond: a record is dropped and counted).
    # None: beside the SQLite file; for PostgreSQL, $WEBGPT_HOME/answer-spool-<digest>.jsonl
    answer_spool: Path | None = None
    answer_spool_max_bytes: int = Field(default=256 * 1024 * 1024, ge=1024)
    database_retry_s: float = Field(default=5.0, gt=0)  # while it is down, try again this often
    # /readyz answers from the last check, made this often in the background.
    readiness_check_s: float = Field(default=5.0, gt=0)
    # A JSON answer's deadline: the default, and the most a request's deadline_s may ask.
    answer_deadline_s: float = Field(default=300.0, gt=0)
    max_answer_deadline_s: float = Field(default=900.0, gt=0)
    # A request repeated with the same Idempotency-Key joins or returns the first one's
    # outcome for this long (per replica, at most max_idempotent_answers kept).
    idempotency_ttl_s: float = Field(default=600.0, gt=0)
    max_idempotent_answers: int = Field(default=1024, ge=1)

    def episode_config(self, temperature: float) -> "EpisodeConfig":
        """How the service decodes an episode at this temperature: guided, with the decline
        threshold and the answer rules set here. Trainer rollouts and expert iteration
        sample with this same config (learning.rl.rollouts), so the policy is trained on
        the decoding it is served with."""
        from webgpt.agent.episode import EpisodeConfig

        return EpisodeConfig(
            temperature=temperature,
            guided=self.policy_format == "completion",
            **self.answer_rules(),
        )

    def reward_on_first_use(self) -> bool:
        """The reward model is the shipped one, loaded when a request first needs it."""
        return self.reward_model == Path(DEFAULT_REWARD)

    def answer_rules(self) -> dict[str, Any]:
        """The EpisodeConfig fields of the answer rules of guided decoding, for answers and
        for a new policy version's canaries alike."""
        return {
            "explanation_quotes": self.explanation_quotes,
            "question_kind": load_question_kind(self.question_kind),
            "grounded_declines": self.grounded_declines,
            "answerability": load_answerability(self.answerability, WebSettings().offline_store),
            "evidence_declines": self.evidence_declines,
            "evidence_margin": self.evidence_margin,
            "relevant_quotes": self.relevant_quotes or None,
            "question_search": self.question_search,
            "judge_margin": self.judge_margin,
        }

    def database(self) -> str | Path:
        if self.database_url is not None:
            return self.database_url.get_secret_value()
        return self.feedback_db or webgpt_home() / "feedback.sqlite"

    def api_key_list(self) -> list[ApiKey]:
        """The configured keys with their roles; ConfigurationError when malformed."""
        return parse_keys(self.api_keys.get_secret_value())
