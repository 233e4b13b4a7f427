"""Which files of a web bundle's folder are ortnb's (web_folder): a folder ortnb did not write is refused, never
emptied, whatever its files are called; writing a bundle again replaces only the files bundle.json lists, while
they are as ortnb wrote them, and the person's own files stay."""

from __future__ import annotations

import json

import pytest

from ortnb.edge import web_folder
from ortnb.errors import ConfigError


def scratch_bundle(folder, files: dict):
    """A bundle as web_bundle leaves it in its scratch folder: the files, then bundle.json listing them."""
    folder.mkdir(parents=True)
    for name, content in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(content)
    (folder / "bundle.json").write_text(json.dumps({"format": web_folder.FORMAT,
                                                    "written": web_folder.listing(folder)}))
    return folder


def write(tmp_path, out, files: dict, name="scratch"):
    """check_destination, then place: what web_bundle does with a finished scratch folder."""
    scratch = scratch_bundle(tmp_path / name, files)
    old = web_folder.check_destination(out, list(files))
    web_folder.place(scratch, out, old)


def tree(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_a_folder_holding_another_tools_bundle_json_is_refused_naming_what_is_there(tmp_path):
    out = tmp_path / "site"
    out.mkdir()
    (out / "bundle.json").write_text('{"name": "my-webpack-app"}')
    (out / "main.js").write_text("console.log(1)")
    with pytest.raises(ConfigError) as refused:
        web_folder.check_destination(out, ["index.html"])
    assert str(refused.value) == (f"out_dir '{out}' holds bundle.json, main.js, and no bundle.json ortnb wrote: ortnb "
                                  "replaces only a bundle it wrote, so give an empty or new folder for the bundle")
    assert tree(out) == ["bundle.json", "main.js"]


@pytest.mark.parametrize("content", ["", "not json", "[1, 2]", '{"format": "ortnb-web-bundle/2"}',
                                     '{"format": "ortnb-web-bundle/2", "written": {"../victim": "x"}}',
                                     '{"format": "ortnb-web-bundle/2", "written": {"/etc/passwd": "x"}}'])
def test_a_bundle_json_ortnb_did_not_write_is_no_licence_to_delete(tmp_path, content):
    (tmp_path / "victim").write_text("keep me")
    out = tmp_path / "site"
    out.mkdir()
    (out / "bundle.json").write_text(content)
    assert web_folder.owned(out) is None
    with pytest.raises(ConfigError, match="no bundle.json ortnb wrote"):
        web_folder.check_destination(out, ["index.html"])
    assert (tmp_path / "victim").read_text() == "keep me"


def test_a_refusal_names_six_entries_and_counts_the_rest(tmp_path):
    for index in range(9):
        (tmp_path / f"f{index}.txt").write_text("x")
    with pytest.raises(ConfigError, match=r"holds f0.txt, f1.txt, f2.txt, f3.txt, f4.txt, f5.txt and 3 more, and no"):
        web_folder.check_destination(tmp_path, ["index.html"])


def test_writing_again_replaces_ortnbs_files_and_keeps_the_persons(tmp_path):
    out = tmp_path / "web"
    write(tmp_path, out, {"index.html": "v1", "ort/a.js": "a1", "data.json": "rows1"}, "first")
    (out / "notes.txt").write_text("mine")
    (out / "ort" / "README").write_text("also mine")
    write(tmp_path, out, {"index.html": "v2", "ort/a.js": "a2"}, "second")
    assert tree(out) == ["bundle.json", "index.html", "notes.txt", "ort/README", "ort/a.js"]  # data.json: not any more
    assert (out / "index.html").read_text() == "v2" and (out / "notes.txt").read_text() == "mine"
    assert sorted(json.loads((out / "bundle.json").read_text())["written"]) == ["index.html", "ort/a.js"]
    assert not (tmp_path / "second").exists()


def test_an_emptied_folder_of_ortnbs_goes_and_a_new_folder_is_made(tmp_path):
    out = tmp_path / "new" / "web"
    write(tmp_path, out, {"index.html": "v1", "eval/rows.json": "r"}, "first")
    write(tmp_path, out, {"index.html": "v2"}, "second")
    assert tree(out) == ["bundle.json", "index.html"] and not (out / "eval").exists()


def test_a_file_of_ortnbs_changed_since_is_named_and_kept(tmp_path):
    out = tmp_path / "web"
    write(tmp_path, out, {"index.html": "v1", "app.js": "a"}, "first")
    (out / "index.html").write_text("my edit")
    with pytest.raises(ConfigError) as refused:
        write(tmp_path, out, {"index.html": "v2", "app.js": "b"}, "second")
    assert str(refused.value) == (
        f"out_dir '{out}': index.html changed after ortnb wrote it (not the sha256 bundle.json lists), so writing "
        "the bundle again would lose the change: move it out of the folder, or give another folder")
    assert (out / "index.html").read_text() == "my edit" and (out / "app.js").read_text() == "a"


def test_a_persons_file_where_the_new_bundle_writes_one_is_named_and_kept(tmp_path):
    out = tmp_path / "web"
    write(tmp_path, out, {"index.html": "v1"}, "first")
    (out / "data.json").write_text("my rows")
    (out / "ort").write_text("a file where the bundle puts a folder")
    with pytest.raises(ConfigError) as refused:
        write(tmp_path, out, {"index.html": "v2", "data.json": "rows", "ort/a.js": "a"}, "second")
    assert str(refused.value) == (
        f"out_dir '{out}': data.json, ort/a.js are not ortnb's (not in bundle.json's list), and the bundle writes "
        "them: move them out of the folder, or give another folder")
    assert (out / "data.json").read_text() == "my rows" and (out / "index.html").read_text() == "v1"


def test_a_bundle_of_the_first_format_is_known_by_the_names_that_version_wrote(tmp_path):
    out = tmp_path / "web"
    (out / "ort").mkdir(parents=True)
    (out / "bundle.json").write_text('{"format": "ortnb-web-bundle/1"}')
    (out / "index.html").write_text("old")
    (out / "ort" / "ort.training.wasm.min.js").write_text("old")
    (out / "notes.txt").write_text("mine")
    write(tmp_path, out, {"index.html": "new", "ort/ort.training.wasm.min.js": "new"})
    assert tree(out) == ["bundle.json", "index.html", "notes.txt", "ort/ort.training.wasm.min.js"]
    assert (out / "index.html").read_text() == "new"


def test_ortnb_edge_web_bundle_is_the_function_after_every_edge_module_is_imported():
    """It was the submodule ortnb/edge/web_bundle.py once anything imported it: 'module' object is not callable."""
    import importlib
    import pkgutil

    import ortnb.edge

    for module in pkgutil.iter_modules(ortnb.edge.__path__):
        if module.name not in ("worker",):  # worker hides torch for the rest of its process
            importlib.import_module(f"ortnb.edge.{module.name}")
    from ortnb.edge import WebBundle, web_bundle

    assert callable(ortnb.edge.web_bundle) and web_bundle is ortnb.edge.web_bundle
    assert web_bundle.__name__ == "web_bundle" and WebBundle.__name__ == "WebBundle"
    for name in ortnb.edge.__all__:
        assert not isinstance(getattr(ortnb.edge, name), type(ortnb.edge)), name
