"""The answering service and the `webgpt` command line."""
