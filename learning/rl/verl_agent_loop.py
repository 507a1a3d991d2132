"""Our agent loop registered with verl (imported by verl's workers; needs verl installed).

`webgpt train verl` writes the data, the agent-loop config that names `WebGPTAgentLoop`
and the launch command (docs/reward.md, "Many GPUs: verl"). The logic lives in
learning/rl/verl.py; this module only binds it to verl's base classes, through factories
that the tests also call with stand-in bases.
"""

from typing import Any

import ray
from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopManager,
    AgentLoopMetrics,
    AgentLoopOutput,
    AgentLoopWorker,
    register,
)

from webgpt.learning.rl.verl import AGENT_NAME, agent_loop_class, packed_worker_class

WebGPTAgentLoop: Any = register(AGENT_NAME)(
    agent_loop_class(AgentLoopBase, AgentLoopOutput, AgentLoopMetrics)
)
PackedAgentLoopWorker: Any = packed_worker_class(AgentLoopWorker)


class PackedAgentLoopManager(AgentLoopManager):  # type: ignore[misc]
    """verl's manager with our worker, whose position ids restart at every packed prompt.
    Name it in `actor_rollout_ref.rollout.agent.agent_loop_manager_class`."""

    def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
        if not config.actor_rollout_ref.model.get("use_remove_padding", False):
            # without it verl passes an attention mask, and restarting positions alone do
            # not keep a command from seeing the earlier steps' text
            raise ValueError(
                "the webgpt agent loop needs actor_rollout_ref.model.use_remove_padding=True"
            )
        self.agent_loop_workers_class = ray.remote(PackedAgentLoopWorker)
        super().__init__(config, *args, **kwargs)
