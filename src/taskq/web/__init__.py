"""``taskq dashboard``: the operator's web UI (the ``taskq[web]`` extra).

Starlette + Jinja2 templates + htmx (vendored in ``static/``: no CDN, no build step),
served by uvicorn. See docs/operating.md.
"""

from __future__ import annotations

from .app import DashboardSettings, create_app

__all__ = ["DashboardSettings", "create_app"]
