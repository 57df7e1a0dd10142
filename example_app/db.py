"""The bookshop's SQLite database: created and seeded on first use (stdlib sqlite3)."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

DEFAULT_PATH = Path(__file__).with_name("bookshop.db")
SEED_BOOKS = [
    ("Dune", "Frank Herbert", 1250),
    ("The Left Hand of Darkness", "Ursula K. Le Guin", 1100),
    ("Neuromancer", "William Gibson", 990),
    ("Kindred", "Octavia E. Butler", 1050),
]
# A tool that asks before it writes keys the write with ctx.idempotency_key, UNIQUE here: a retried
# round inserts nothing and finds the row its first run wrote (see docs/side-effects.md).
SCHEMA = """
CREATE TABLE IF NOT EXISTS books (id INTEGER PRIMARY KEY, title TEXT NOT NULL, author TEXT NOT NULL,
                                  price_cents INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, book_id INTEGER NOT NULL, quantity INTEGER NOT NULL,
                                   shipping TEXT NOT NULL, customer TEXT, gift_note TEXT,
                                   idempotency_key TEXT UNIQUE);
CREATE TABLE IF NOT EXISTS reviews (id INTEGER PRIMARY KEY, book_id INTEGER NOT NULL, rating INTEGER NOT NULL,
                                    comment TEXT, idempotency_key TEXT UNIQUE);
CREATE TABLE IF NOT EXISTS deleted_books (idempotency_key TEXT PRIMARY KEY, id INTEGER NOT NULL,
                                          title TEXT NOT NULL, author TEXT NOT NULL, price_cents INTEGER NOT NULL);
"""

_init_lock = threading.Lock()
_initialised: set[str] = set()


def database_path() -> str:
    return os.environ.get("BOOKSHOP_DB", str(DEFAULT_PATH))


def connect(path: str | None = None) -> sqlite3.Connection:
    path = path or database_path()
    connection = sqlite3.connect(path, check_same_thread=False, timeout=10)
    connection.row_factory = sqlite3.Row
    with _init_lock:
        if path not in _initialised:
            _create(connection)
            _initialised.add(path)
    return connection


def _create(connection: sqlite3.Connection) -> None:
    connection.executescript(SCHEMA)
    _add_idempotency_keys(connection)
    if connection.execute("SELECT COUNT(*) FROM books").fetchone()[0] == 0:
        connection.executemany("INSERT INTO books (title, author, price_cents) VALUES (?, ?, ?)", SEED_BOOKS)
    connection.commit()


def _add_idempotency_keys(connection: sqlite3.Connection) -> None:
    """A database made by an older bookshop has no idempotency keys yet: add them."""
    for table in ("orders", "reviews"):
        columns = {row["name"] for row in connection.execute(f"PRAGMA table_info({table})")}
        if "idempotency_key" not in columns:
            connection.execute(f"ALTER TABLE {table} ADD COLUMN idempotency_key TEXT")
            connection.execute(f"CREATE UNIQUE INDEX {table}_idempotency_key ON {table} (idempotency_key)")


def get_db() -> Iterator[sqlite3.Connection]:
    """FastAPI dependency: one connection per request, closed afterwards."""
    connection = connect()
    try:
        yield connection
    finally:
        connection.close()
