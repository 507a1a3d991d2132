"""PDF text extraction with pdfminer.six; runs inside a render worker (browser.workers)."""

import io

from pdfminer.high_level import extract_text
from pdfminer.pdfparser import PDFSyntaxError

from webgpt.browser.page import Page, neutralize
from webgpt.browser.render import RenderOptions, error_page, wrap_lines

MAX_PDF_PAGES = 50


def render_pdf(
    body: bytes, url: str, options: RenderOptions, max_pages: int = MAX_PDF_PAGES
) -> Page:
    """The text of the first max_pages pages of a PDF."""
    try:
        text = extract_text(io.BytesIO(body), maxpages=max_pages)
    except PDFSyntaxError:
        return error_page(url, "The PDF could not be read.")
    title = url.rstrip("/").rsplit("/", 1)[-1] or url
    lines = wrap_lines(neutralize(text.replace("\x0c", "\n")), options.wrap_width)
    return Page(url=url, title=title, lines=lines, kind="pdf")
