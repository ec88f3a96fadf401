"""Versioned SQLite files: migrations applied once, old files read, newer ones refused in one line."""

from __future__ import annotations

import sqlite3

import pytest

from runtime.approvals.store import MIGRATIONS as APPROVALS
from runtime.approvals.store import ApprovalStore
from runtime.orchestration.state import MIGRATIONS as ORCHESTRATOR
from runtime.orchestration.state import OrchestratorState
from runtime.sqlite_schema import SchemaTooNew, migrate, version_of


def _conn(path):
    return sqlite3.connect(path, isolation_level=None)


def test_migrations_run_once_in_order_and_the_file_says_how_far(tmp_path):
    steps = ["create table a (x integer);", "alter table a add column y integer;\ncreate index a_y on a (y);"]
    conn = _conn(tmp_path / "f.sqlite")
    assert migrate(conn, steps[:1], "f") == 0 and version_of(conn) == 1
    assert migrate(conn, steps, "f") == 1 and version_of(conn) == 2
    assert migrate(conn, steps, "f") == 2  # nothing left to apply
    assert [r[1] for r in conn.execute("pragma table_info(a)")] == ["x", "y"]


def test_a_failed_migration_leaves_the_file_as_it_was(tmp_path):
    conn = _conn(tmp_path / "f.sqlite")
    migrate(conn, ["create table a (x integer);"], "f")
    with pytest.raises(sqlite3.OperationalError):
        migrate(conn, ["create table a (x integer);", "create table b (x integer);\nthis is not sql;"], "f")
    assert version_of(conn) == 1
    assert conn.execute("select name from sqlite_master where name = 'b'").fetchone() is None


@pytest.mark.parametrize("store", ["orchestrator", "approvals"])
def test_the_stores_read_a_file_from_before_versions_and_refuse_a_newer_one(tmp_path, store):
    path = tmp_path / f"{store}.sqlite"
    migrations = ORCHESTRATOR if store == "orchestrator" else APPROVALS
    conn = _conn(path)
    for statement in migrations[0].split(";"):  # the tables as a file from before versions holds them
        if statement.strip():
            conn.execute(statement)
    assert version_of(conn) == 0
    conn.close()
    opened = OrchestratorState(path) if store == "orchestrator" else ApprovalStore(path)
    if store == "orchestrator":
        opened.close()
    assert version_of(_conn(path)) == len(migrations)
    _conn(path).execute(f"pragma user_version = {len(migrations) + 1}")
    with pytest.raises(SchemaTooNew, match="newer runtime"):
        OrchestratorState(path) if store == "orchestrator" else ApprovalStore(path)
