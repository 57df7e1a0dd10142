"""The benchmark: this project beside the raw ASGI and FastAPI floors, the official SDK and FastMCP.

Run ``bench/run.sh`` (sets everything up) or ``python -m bench`` in a prepared venv; see
docs/performance.md. Not part of the test suite.
"""
