"""The builtin agent's tools: what they do, and the mistakes they answer instead of raising."""

from runtime.agent.schemas import SCHEMAS, tool_schemas
from runtime.agent.tools import TOOLS
from runtime.agent.tools.bash import bash
from runtime.agent.tools.files import edit, multi_edit, read, write
from runtime.agent.tools.search import glob, grep


def test_read_numbers_lines_and_pages(tmp_path):
    (tmp_path / "a.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    text, err = read({"file_path": "a.txt", "offset": 3, "limit": 2}, str(tmp_path))
    assert not err and text.splitlines()[:2] == ["     3\tline 3", "     4\tline 4"]
    assert "6 more lines" in text
    text, err = read({"file_path": "missing.txt"}, str(tmp_path))
    assert err and "cannot read missing.txt" in text


def test_write_creates_folders(tmp_path):
    text, err = write({"file_path": "new/deep/f.py", "content": "x = 1\n"}, str(tmp_path))
    assert not err and (tmp_path / "new/deep/f.py").read_text() == "x = 1\n"


def test_edit_needs_a_unique_match_unless_replace_all(tmp_path):
    f = tmp_path / "f.py"
    f.write_text("a = 1\na = 1\n")
    text, err = edit({"file_path": str(f), "old_string": "a = 1", "new_string": "b = 2"}, str(tmp_path))
    assert err and "occurs 2 times" in text and f.read_text() == "a = 1\na = 1\n"
    text, err = edit({"file_path": str(f), "old_string": "a = 1", "new_string": "b = 2", "replace_all": True}, str(tmp_path))
    assert not err and f.read_text() == "b = 2\nb = 2\n"
    text, err = edit({"file_path": str(f), "old_string": "zzz", "new_string": "y"}, str(tmp_path))
    assert err and "not found" in text


def test_multi_edit_is_all_or_nothing(tmp_path):
    f = tmp_path / "f.py"
    f.write_text("one\ntwo\n")
    edits = [{"old_string": "one", "new_string": "1"}, {"old_string": "three", "new_string": "3"}]
    text, err = multi_edit({"file_path": str(f), "edits": edits}, str(tmp_path))
    assert err and "edit 2" in text and f.read_text() == "one\ntwo\n"
    edits[1] = {"old_string": "two", "new_string": "2"}
    text, err = multi_edit({"file_path": str(f), "edits": edits}, str(tmp_path))
    assert not err and f.read_text() == "1\n2\n"


def test_glob_and_grep_skip_git(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / "src/a.py").write_text("TODO: one\nfine\n")
    (tmp_path / "src/b.py").write_text("nothing\n")
    (tmp_path / ".git/c.py").write_text("TODO: hidden\n")
    text, err = glob({"pattern": "**/*.py"}, str(tmp_path))
    assert not err and text.splitlines() == [str(tmp_path / "src/a.py"), str(tmp_path / "src/b.py")]
    text, err = grep({"pattern": "TODO"}, str(tmp_path))
    assert not err and text == str(tmp_path / "src/a.py")
    text, _ = grep({"pattern": "todo", "-i": True, "output_mode": "content"}, str(tmp_path))
    assert text == f"{tmp_path / 'src/a.py'}:1:TODO: one"
    text, _ = grep({"pattern": "(", "path": "src"}, str(tmp_path))
    assert text.startswith("bad pattern")


def test_bash_reports_exit_codes_and_timeouts(tmp_path):
    text, err = bash({"command": "echo hi && echo oops >&2"}, str(tmp_path))
    assert not err and text == "hi\noops\n"
    text, err = bash({"command": "exit 3"}, str(tmp_path))
    assert err and "[exit code 3]" in text
    text, err = bash({"command": "sleep 5", "timeout": 300}, str(tmp_path))
    assert err and "timed out" in text
    text, err = bash({"command": "sleep 1", "run_in_background": True}, str(tmp_path))
    assert err and "background" in text


def test_schemas_follow_the_role_and_cover_every_tool():
    assert set(SCHEMAS) == set(TOOLS)
    names = [s["function"]["name"] for s in tool_schemas(["Read", "Glob", "Bash", "NotebookEdit"])]
    assert names == ["Read", "Glob", "Bash"]
