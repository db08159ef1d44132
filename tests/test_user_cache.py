"""symgrad's cache folder (``core.user_cache``)."""
import os

from symgrad.core.user_cache import cache_folder


def test_the_cache_follows_symgrad_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE", str(tmp_path / "here"))
    assert cache_folder("rules") == str(tmp_path / "here" / "rules")
    assert os.path.isdir(tmp_path / "here" / "rules")


def test_without_a_home_folder_the_cache_is_in_the_temporary_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("SYMGRAD_CACHE", raising=False)
    monkeypatch.setattr(os.path, "expanduser", lambda p: p)    # no HOME, no passwd entry
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    assert cache_folder("rules") == str(tmp_path / "tmp" / "symgrad-rules")
    assert not (tmp_path / "~").exists()


def test_an_unwritable_cache_falls_back_to_the_temporary_directory(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("SYMGRAD_CACHE", str(blocker))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    assert cache_folder("numba") == str(tmp_path / "tmp" / "symgrad-numba")
