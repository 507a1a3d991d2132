"""The browsing agent: policy clients, episodes, best-of-n and trainers (issue #3)."""
