"""The text web environment of WebGPT: commands, pages, search engines, the offline web.

No model code lives here; agent/ drives a `BrowserSession` (browser.session).
"""
