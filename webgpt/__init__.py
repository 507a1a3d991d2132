"""webgpt: answer open questions with quote-backed answers by browsing the web (WebGPT).

The project's folders at the top of the checkout (agent/, browser/, evals/, infra/,
learning/, reward/, service/) are this package's subpackages: webgpt/ holds a link to
each, so the checkout, an editable install and the wheel all import them as
`webgpt.agent`, `webgpt.service`, ... and nothing installs a top-level `agent` or
`service` (docs/architecture.md).
"""
