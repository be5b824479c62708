"""Serve the chat page and its assets with a strict content security policy."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import FileResponse, HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

WEB_DIR = Path(__file__).parent
STATIC_DIR = WEB_DIR / "static"
ASSET = re.compile(r"[a-z0-9_-]{1,64}\.(js|css|svg)")
# No inline script or style, nothing from elsewhere: what the page shows of a spec or a log cannot run.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; "
       "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "X-Frame-Options": "DENY"}
MEDIA = {"js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8", "svg": "image/svg+xml"}

templates = Environment(loader=FileSystemLoader(WEB_DIR / "templates"), autoescape=select_autoescape(["html"]))
router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse)
def page(request: Request) -> HTMLResponse:
    """Return the chat page (it holds no data: the script fetches threads and jobs with the user's token)."""
    version = request.app.version
    html = templates.get_template("index.html").render(version=version)
    return HTMLResponse(html, headers=HEADERS | {"Cache-Control": "no-cache"})


@router.get("/static/{name}")
def asset(name: str) -> FileResponse:
    """Return one of the page's scripts or style sheets."""
    match = ASSET.fullmatch(name)
    path = STATIC_DIR / name
    if match is None or not path.is_file():
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no asset {name[:80]!r}")
    return FileResponse(path, media_type=MEDIA[match.group(1)], headers=HEADERS | {"Cache-Control": "no-cache"})
