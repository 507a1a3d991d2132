"""Settings: every WEBGPT_* environment variable is a field of a subclass of `Settings`.

Each package declares the variables it reads next to the code that reads them
(browser.web.WebSettings, service.settings.ServiceSettings, `HomeSettings` here), and all
of them are parsed the same way: pydantic-settings, prefix WEBGPT_, an empty variable
meaning unset (so compose files and ConfigMaps can leave one blank), unknown ones ignored.
"""

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WEBGPT_", extra="ignore", env_ignore_empty=True)


class HomeSettings(Settings):
    # Downloads, the offline web, the model registry, logs and the SQLite feedback file.
    home: Path = Field(default_factory=lambda: Path.home() / ".cache" / "webgpt")


def webgpt_home() -> Path:
    """Where downloads, the offline web and models live (WEBGPT_HOME, else ~/.cache/webgpt)."""
    return HomeSettings().home
