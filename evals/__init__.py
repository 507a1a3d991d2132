"""Evaluation: question sets and their judging, `webgpt eval` and the best-of-n estimates."""
