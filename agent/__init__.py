"""The runtime agent, what serving runs: policy clients, prompts, the grammar of guided
decoding, episodes, answers (with best-of-n), declines and the policy registry."""
