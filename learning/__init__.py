"""The learning loop: questions, demonstrators and demonstrations, comparisons, behavior
cloning and RL (docs/architecture.md). Serving never imports it, except the
demonstration record the people's page writes."""
