"""``/guide/``: the documentation site (``docs/`` and ``mkdocs.yml``), served as static files once built.

``scripts/dev.sh`` builds it into ``site/`` at the repository root (``mkdocs build``, when MkDocs is
installed); the API serves that folder at ``/guide/``, beside ``/docs``. Until it is built, and
wherever no site ships (the Lambda images), ``/guide/`` answers 404. The site loads nothing from
another host: ``mkdocs.yml`` turns Material's web fonts off and uses no CDN script.
"""

from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

SITE_DIR = Path(__file__).resolve().parents[2] / "site"


class _BuiltSite(StaticFiles):
    """Static files from a folder that may not exist yet: 404 until the site is built, not a 500."""

    async def check_config(self) -> None:
        # StaticFiles refuses a missing directory with a RuntimeError (a 500 on every request);
        # a site not built yet is only absent, so every path under it is a 404 until it is.
        return None


def mount(app: FastAPI, directory: Path | None = None) -> None:
    """Serve the built site (``SITE_DIR`` unless told otherwise) at /guide/."""
    site = directory if directory is not None else SITE_DIR
    app.mount("/guide", _BuiltSite(directory=site, html=True, check_dir=False), name="guide")
