"""Reinforcement learning in the browsing environment (`webgpt train rl`).

WebGPT's RL (paper 000 §3, Appendix E): the policy browses and answers in real episodes;
the reward is the reward model's score of the final answer only, with a KL penalty that
keeps the policy near the behavior-cloned one. Built on TRL's `GRPOTrainer`, not a loop of
our own: its `rollout_func` runs our episodes (agent.episode.run_episode on the offline
web, the policy sampling in this process through agent.hf_policy) and returns each
episode as token ids, and the trainer does the rest (group-relative advantages, the
clipped objective, `beta` × the per-token KL to the reference, logging).

How an episode becomes one training sequence. Our prompts are rebuilt at every step (the
current page, the quotes, the past actions: agent.prompts), so an episode is not one
growing transcript. It is packed: the first browsing prompt is the "prompt"; the
"completion" is command 1, prompt 2, command 2, …, the answer prompt, the answer. The
environment mask (`env_mask`) is 1 on the policy's tokens and 0 on every prompt token,
so the loss, the KL and the entropy cover the policy's tokens only. The log-probabilities
are computed with position ids that restart at every prompt and no attention mask, which
transformers turns into a block-diagonal causal mask (packed sequences): each command is
scored given exactly the prompt it was sampled from, never the earlier steps' text. A test
checks that the packed log-probabilities equal those of each step scored alone.

WebGPT's details: the action limit is drawn per episode from a range; a share of groups
are answer-only (one episode browses, its quotes are kept, and the group is that many
answers written from them; an episode without quotes browses again, a few times at
most, then the group trains whole episodes or answers another question); one
optimisation epoch per batch of rollouts; training
stops once the mean KL passes a budget. The result, the LoRA weights merged into the
starting policy, is published into the policy registry with the parent policy, the reward
model and the questions it was trained on.

Modules: config (the options), packing (an episode as one sequence; the verl path packs
the same way), rollouts (episodes sampled, recorded, scored), trainer (the GRPOTrainer
subclass and `train_rl`), publish (into the registry), verl and verl_agent_loop (the same
episodes as verl's agent loop, many GPUs).
"""
