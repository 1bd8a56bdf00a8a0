"""`bert-explorer`, the installed app's command: `streamlit run` on its app.py, arguments passed on to Streamlit.

    bert-explorer                          # http://localhost:8501
    bert-explorer --server.port 8600       # any `streamlit run` option
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path


def app_path() -> Path:
    """app.py: in an installed wheel, package `bert_explorer_app` (app.py, views/, .streamlit/ side by side); in a
    checkout, the repository's root (ui's parent)."""
    spec = importlib.util.find_spec("bert_explorer_app")
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in [*roots, str(Path(__file__).resolve().parents[1])]:
        if (Path(root) / "app.py").is_file() and (Path(root) / "views").is_dir():
            return Path(root) / "app.py"
    raise SystemExit("bert-explorer: the app's app.py and views/ are not installed beside the ui package")


def main(argv: list[str] | None = None) -> None:
    """Run the app with Streamlit's own command line, `python -m streamlit run <app.py> ...`, in place of this
    process (its config: .streamlit/config.toml beside app.py); the public command, not Streamlit's internal CLI."""
    args = sys.argv[1:] if argv is None else argv
    os.execvp(sys.executable, [sys.executable, "-m", "streamlit", "run", str(app_path()), *args])

if __name__ == "__main__":
    main()
