"""`envbuilder bump` on index packages: real wheels of several versions on the local index server."""

from __future__ import annotations

from tests.resolve.project import publish


def test_bump_moves_an_index_package_to_the_newest_release_the_matrix_allows(project, default_index, tmp_path):
    publish(default_index, "colorama", "1.0")
    project.write_matrix("ix", {"colorama": ">=1.0"})
    assert project.run("lock", "ix").rc == 0
    matrix = project.root / "matrices" / "ix.yaml"
    before = matrix.read_bytes()
    publish(default_index, "colorama", "1.1", requires=["termcolor>=2"])
    publish(default_index, "termcolor", "2.4")
    publish(default_index, "colorama", "2.0rc1")  # a pre-release: the matrix names none, so it is not a candidate

    dry = project.run("bump", "ix", "colorama", "--dry-run")
    assert dry.rc == 0 and "would move colorama: index 1.0 -> 1.1" in dry.err, dry.text
    body = tmp_path / "ix.md"
    result = project.run("bump", "ix", "colorama", "--body-file", str(body))
    assert result.rc == 0, result.text
    assert matrix.read_bytes() == before  # the constraint allows 1.1: only the lock moves
    lock = project.read_lock("ix")
    assert lock.package("colorama").version == "1.1" and lock.package("termcolor").version == "2.4"
    text = body.read_text()
    assert "`colorama` (index): 1\\.0 → 1\\.1" in text
    assert "| colorama | upgraded minor | 1.0 | 1.1 |" in text and "| termcolor | added" in text
    again = project.run("bump", "ix", "colorama")
    assert again.rc == 0 and "nothing to bump" in again.err


def test_a_pre_release_counts_when_the_matrix_names_one(project, default_index):
    publish(default_index, "colorama", "2.0rc1")
    project.write_matrix("ixpre", {"colorama": ">=2.0rc1"})
    assert project.run("lock", "ixpre").rc == 0
    publish(default_index, "colorama", "2.0rc2")
    result = project.run("bump", "ixpre", "colorama", "--body-file", str(project.root / "b.md"))
    assert result.rc == 0, result.text
    assert project.read_lock("ixpre").package("colorama").version == "2.0rc2"


def test_version_pins_the_matrix_in_place(project, default_index):
    for version in ("1.0", "1.1"):
        publish(default_index, "colorama", version)
    project.write_matrix("ixpin", {"colorama": "==1.0"}, extra="# the pin is reviewed by hand\n")
    assert project.run("lock", "ixpin").rc == 0
    pinned = project.run("bump", "ixpin", "colorama")
    assert pinned.rc == 0 and "nothing to bump" in pinned.err  # ==1.0 allows nothing newer
    matrix = project.root / "matrices" / "ixpin.yaml"
    before = matrix.read_text()
    result = project.run("bump", "ixpin", "colorama", "--version", "1.1", "--body-file", str(project.root / "b.md"))
    assert result.rc == 0, result.text
    assert matrix.read_text() == before.replace('"==1.0"', '"==1.1"')
    assert project.read_lock("ixpin").package("colorama").version == "1.1"


def test_bad_input_names_file_and_key(project, default_index):
    publish(default_index, "colorama", "1.0")
    project.write_matrix("ixbad", {"colorama": ">=1.0"})
    assert project.run("lock", "ixbad").rc == 0
    unknown = project.run("bump", "ixbad", "nosuch")
    assert unknown.rc == 2 and "ixbad.yaml: key 'packages': no package 'nosuch'" in unknown.err
    wrong = project.run("bump", "ixbad", "colorama", "--branch", "main")
    assert wrong.rc == 2 and "index package" in wrong.err
    version = project.run("bump", "ixbad", "colorama", "--version", "not a version")
    assert version.rc == 2 and "not a PEP 440 version" in version.err
    missing = project.run("bump", "ixbad", "colorama", "--version", "9.9", "--body-file", str(project.root / "b.md"))
    assert missing.rc == 1 and "Traceback" not in missing.text  # no 9.9 on the index: the re-lock says no
    assert (project.root / "matrices" / "ixbad.yaml").read_text().count(">=1.0") == 1  # rolled back


def test_an_unreachable_index_is_exit_3_and_nothing_changes(project, default_index, monkeypatch):
    publish(default_index, "colorama", "1.0")
    project.write_matrix("ixdown", {"colorama": ">=1.0"})
    assert project.run("lock", "ixdown").rc == 0
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    result = project.run("bump", "ixdown", "colorama")
    assert result.rc == 3 and "Traceback" not in result.text, result.text


def test_a_value_inherited_through_extends_is_not_edited(project, default_index):
    """The parent file is shared with other targets: moving it there would move them unlocked."""
    for version in ("1.0", "1.1"):
        publish(default_index, "colorama", version)
    project.write_matrix("ixparent", {"colorama": "==1.0"})
    child = project.root / "matrices" / "ixchild.yaml"
    child.write_text("schema: 1\ntarget: ixchild\nextends: ixparent.yaml\n")
    assert project.run("lock", "ixchild").rc == 0
    result = project.run("bump", "ixchild", "colorama", "--version", "1.1")
    assert result.rc == 2 and "ixparent.yaml through `extends:`" in result.err, result.text
    assert "==1.0" in (project.root / "matrices" / "ixparent.yaml").read_text()
