"""Loopback servers speaking the real wire formats of SearXNG, Brave Search and Bing v7."""

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

BRAVE_KEY = "brave-test-key"
BING_KEY = "bing-test-key"


def _fault(query: str) -> Response | None:
    """Queries that make any of the fake engines fail the way the real ones do."""
    if query == "rate limit":
        return JSONResponse(
            {
                "type": "ErrorResponse",
                "error": {
                    "code": "RATE_LIMITED",
                    "status": 429,
                    "detail": "Request rate limit exceeded",
                },
            },
            status_code=429,
            headers={"Retry-After": "2"},
        )
    if query == "server error":
        return PlainTextResponse("Internal Server Error", status_code=500)
    if query == "not json":
        return PlainTextResponse("<html>maintenance</html>", media_type="text/html")
    return None


async def searxng(request: Request) -> Response:
    query = request.query_params.get("q", "")
    if request.query_params.get("format") != "json":
        return PlainTextResponse("Forbidden", status_code=403)  # json format disabled
    if (fault := _fault(query)) is not None:
        return fault
    return JSONResponse(
        {
            "query": query,
            "number_of_results": 2,
            "results": [
                {
                    "url": "https://en.wikipedia.org/wiki/Crow",
                    "title": "Crow - Wikipedia",
                    "content": "Crows are birds of the genus Corvus.",
                    "engine": "wikipedia",
                    "engines": ["wikipedia"],
                    "score": 1.0,
                    "category": "general",
                },
                {
                    "url": "https://www.reddit.com/r/crows",
                    "title": "r/crows",
                    "content": "A forum.",
                    "engine": "duckduckgo",
                    "score": 0.5,
                },
                {"title": "no url here", "content": "skipped"},
            ],
            "answers": [],
            "corrections": [],
            "infoboxes": [],
            "suggestions": [],
            "unresponsive_engines": [],
        }
    )


async def brave(request: Request) -> Response:
    query = request.query_params.get("q", "")
    if request.headers.get("x-subscription-token") != BRAVE_KEY:
        return JSONResponse(
            {
                "type": "ErrorResponse",
                "error": {
                    "code": "SUBSCRIPTION_TOKEN_INVALID",
                    "status": 401,
                    "detail": "The provided subscription token is invalid.",
                },
            },
            status_code=401,
        )
    if (fault := _fault(query)) is not None:
        return fault
    if query == "nothing":
        return JSONResponse({"type": "search", "query": {"original": query}})
    return JSONResponse(
        {
            "type": "search",
            "query": {"original": query},
            "web": {
                "type": "search",
                "results": [
                    {
                        "title": "Gifts From <strong>Crows</strong>",
                        "url": "https://www.birdsoutsidemywindow.org/gifts",
                        "description": "Many <strong>crows</strong> bring &amp; leave gifts.",
                        "type": "search_result",
                    },
                ],
            },
        }
    )


async def bing(request: Request) -> Response:
    query = request.query_params.get("q", "")
    if request.headers.get("ocp-apim-subscription-key") != BING_KEY:
        return JSONResponse(
            {"error": {"code": "401", "message": "Access denied due to invalid subscription key."}},
            status_code=401,
        )
    if query == "rate limit":
        return JSONResponse(
            {
                "_type": "ErrorResponse",
                "errors": [{"code": "RateLimitExceeded", "message": "Rate limit is exceeded."}],
            },
            status_code=429,
            headers={"Retry-After": "1"},
        )
    if (fault := _fault(query)) is not None:
        return fault
    return JSONResponse(
        {
            "_type": "SearchResponse",
            "queryContext": {"originalQuery": query},
            "webPages": {
                "webSearchUrl": "https://www.bing.com/search?q=crows",
                "totalEstimatedMatches": 2,
                "value": [
                    {
                        "id": "https://api.bing.microsoft.com/api/v7/#WebPages.0",
                        "name": "Crow facts",
                        "url": "https://www.example.org/crows",
                        "displayUrl": "https://www.example.org/crows",
                        "snippet": "Crows can recognise human faces.",
                    },
                    {
                        "id": "https://api.bing.microsoft.com/api/v7/#WebPages.1",
                        "name": "Quora: crows?",
                        "url": "https://www.quora.com/crows",
                        "snippet": "blocked",
                    },
                ],
            },
        }
    )


def engines_app() -> Starlette:
    return Starlette(
        routes=[
            Route("/search", searxng),
            Route("/res/v1/web/search", brave),
            Route("/v7.0/search", bing),
        ]
    )
