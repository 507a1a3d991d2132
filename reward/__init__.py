"""The reward model: scoring, reranking and training on comparisons (issue #4)."""
