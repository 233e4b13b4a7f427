"""A web bundle in a real browser (Debian's chromium driven by playwright, ONNX Runtime Web 1.19.2's training
build): the page trains tiny-bert artifacts on bundled Rotten Tomatoes rows with the losses the Python training API
gives on the same batches, its downloaded weights give the page's logits in PyTorch, and bad input (a file without
labels, a label the model lacks, an empty file, no rows at all, a bundle without its wasm file, a browser without
WebAssembly SIMD) is named on the page and trains nothing. One browser, four short page loads."""

from __future__ import annotations

import json
import os
import shutil
import time

import numpy as np
import pytest

from ..lab_driver import BROWSER_FLAGS, CHROMIUM, require_chromium

pytestmark = [pytest.mark.browser, pytest.mark.slow]
STEPS, BATCH, LR = 9, 8, 3e-3
TEXTS = ["a warm and funny delight", "flat, dull and far too long", "the film runs two hours"]


@pytest.fixture(scope="module")
def browser():
    require_chromium()
    from ortnb.edge import web_runtime

    try:
        web_runtime.located()
    except web_runtime.WebRuntimeMissing as error:
        if os.environ.get("ORTNB_REQUIRE_BROWSER") == "1":
            pytest.fail(str(error))
        pytest.skip(str(error))
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_FLAGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """(artifacts, bundle, training rows, held-out rows) of tiny-bert with every weight trainable."""
    pytest.importorskip("onnxruntime.training.api")
    from transformers import AutoTokenizer

    from ortnb import assets
    from ortnb.edge import export_artifacts, web_bundle

    from .._helpers import tiny_bert

    work = tmp_path_factory.mktemp("edge-web")
    tokenizer = AutoTokenizer.from_pretrained(assets.MODELS["minilm"].locate())
    export_artifacts(tiny_bert(vocab_size=tokenizer.vocab_size), work / "artifacts", trainable="all",
                     tokenizer=tokenizer, seq_len=64)
    frame = assets.rotten_tomatoes_frame()
    rows, held_out = frame.iloc[:24].to_dict("records"), frame.iloc[1000:1032].to_dict("records")
    bundle = web_bundle(work / "artifacts", work / "web", data=rows, eval_data=held_out, steps=STEPS,
                        batch_size=BATCH, learning_rate=LR)
    return work / "artifacts", bundle, rows, held_out


def wait_for(page, done: str, timeout: float = 60) -> dict:
    """window.ortnbEdge once ``done`` (a JavaScript expression on it, ``s``) holds or the page failed."""
    deadline = time.monotonic() + timeout
    while True:
        # One evaluation: the state returned is the one the condition held on.
        state, held = page.evaluate(f"""() => {{ const s = window.ortnbEdge ?? {{}};
            return [JSON.parse(JSON.stringify(s)), Boolean({done})]; }}""")
        if held or state.get("status") == "error":
            return state
        if time.monotonic() > deadline:
            raise AssertionError(f"the page did not reach {done!r}: {state}")
        time.sleep(0.2)


def test_the_page_trains_as_the_python_api_and_its_weights_come_back(browser, made, tmp_path):
    from ortnb.edge import load_browser_weights, to_pytorch, train

    artifacts, bundle, rows, _ = made
    with bundle.serve() as server:
        page = browser.new_page(accept_downloads=True)
        console = []
        page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
        page.goto(server.url + "?autostart=1")
        state = wait_for(page, "s.evaluations && s.evaluations.length")
        # ORT logged ~20 "Removing initializer" warnings as console errors at its default session log severity.
        assert not [line for line in console if line.startswith("error")], console
        assert state["status"] == "ready" and state["error"] is None, state
        predictions = [page.evaluate("t => window.ortnbEdge.predict(t).then(() => window.ortnbEdge.predictions.at(-1))",
                                     text) for text in TEXTS]
        with page.expect_download() as download:
            page.click("#download")
        downloaded = tmp_path / download.value.suggested_filename
        download.value.save_as(downloaded)
        page.close()

    assert state["step"] == STEPS and state["simd"] is True and state["threads"] == 1
    browser_losses = state["losses"]
    python = train(artifacts, rows, steps=STEPS, batch_size=BATCH, learning_rate=LR, output_dir=tmp_path / "runs")
    python_losses = python.metrics["loss"].tolist()
    assert abs(browser_losses[0] - python_losses[0]) < 1e-4, (browser_losses[0], python_losses[0])
    assert np.allclose(browser_losses, python_losses, rtol=0, atol=1e-4), (browser_losses, python_losses)
    assert np.mean(browser_losses[-3:]) < np.mean(browser_losses[:3]) - 0.02, browser_losses  # it learns
    evaluation = state["evaluations"][0]
    assert evaluation["samples"] == 32 and evaluation["on"] == "held-out rows" and evaluation["step"] == STEPS
    assert 0 <= evaluation["accuracy"] <= 1 and np.isfinite(evaluation["eval_loss"])
    assert state["timings"]["ready_ms"] > 0 and len(state["timings"]["step_ms"]) == STEPS

    assert downloaded.name == f"ortnb-weights-step-{STEPS}.bin"
    checkpoint = load_browser_weights(artifacts, downloaded)
    assert checkpoint.exists()
    model = to_pytorch(downloaded, artifacts)
    import torch
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(artifacts / "tokenizer.json"))
    tokenizer.no_padding()  # the saved file pads to 128: the page feeds each text at its own length
    with torch.no_grad():
        for text, predicted in zip(TEXTS, predictions):
            ids = torch.tensor([tokenizer.encode(text).ids])
            logits = model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[0].numpy()
            assert np.allclose(logits, predicted["logits"], rtol=0, atol=1e-4), (text, logits, predicted["logits"])
    untrained = to_pytorch(artifacts)  # the weights really moved: the round trip is not the export's own
    first = torch.tensor([tokenizer.encode(TEXTS[0]).ids])
    with torch.no_grad():
        assert not np.allclose(untrained(input_ids=first).logits[0].numpy(), predictions[0]["logits"], atol=1e-4)


def test_bad_rows_are_named_on_the_page_and_train_nothing(browser, made, tmp_path):
    _, bundle, rows, _ = made
    (tmp_path / "no-labels.csv").write_text("text\na fine film\nnot my cup of tea\n")
    (tmp_path / "moods.jsonl").write_text(json.dumps({"text": "a fine film", "label": "LABEL_1"}) + "\n"
                                          + json.dumps({"text": "meh", "label": "maybe"}) + "\n")
    (tmp_path / "empty.csv").write_text("")
    expected = {"no-labels.csv": "no-labels.csv has columns text: each row needs a text column (text or sentence) "
                                 "and a label column (label or labels)",
                "moods.jsonl": 'moods.jsonl line 2 has label "maybe"; the model\'s labels are LABEL_0, LABEL_1',
                "empty.csv": "empty.csv is empty: it needs at least one row"}
    with bundle.serve() as server:
        page = browser.new_page()
        page.goto(server.url)
        wait_for(page, "s.status === 'ready'")
        for name, message in expected.items():
            page.set_input_files("#data-file", str(tmp_path / name))
            state = wait_for(page, "s.error")
            assert message in state["error"] and "Nothing was loaded" in state["error"], state["error"]
            assert message in page.inner_text("#problem")
            assert (state["rows"], state["source"], state["step"], state["status"]) == (len(rows), "bundled", 0,
                                                                                          "ready")
            page.evaluate("window.ortnbEdge.error = null")
        # What a person does by hand: type an example with a label, then a text to classify.
        page.fill("#example-text", "a quiet, lovely film")
        page.select_option("#example-label", "LABEL_1")
        page.click("#add-example")
        page.fill("#predict-text", "a quiet, lovely film")
        page.click("#predict")
        state = wait_for(page, "s.predictions.length === 1")
        assert (state["rows"], state["source"], state["step"]) == (1, "typed", 0)
        assert state["predictions"][0]["label"] in ("LABEL_0", "LABEL_1")
        assert abs(sum(state["predictions"][0]["probabilities"]) - 1) < 1e-6
        assert page.inner_text("#prediction").startswith(state["predictions"][0]["label"] + " (LABEL_0 ")
        page.close()

    bare = tmp_path / "bare"  # a bundle without rows: Train says what to give it
    from ortnb.edge import web_bundle

    web_bundle(made[0], bare, steps=2)
    with web_bundle_server(bare) as server:
        page = browser.new_page()
        page.goto(server.url + "?autostart=1")
        state = wait_for(page, "s.error")
        assert state["status"] == "ready" and state["step"] == 0 and state["losses"] == []
        assert state["error"].startswith("There are no rows to train on: load a .jsonl, .json or .csv file")
        page.close()


def web_bundle_server(folder):
    from ortnb.edge.web_server import serve

    return serve(folder)


def test_a_bundle_without_its_wasm_and_a_browser_without_simd_are_named(browser, made, tmp_path):
    _, bundle, _, _ = made
    broken = tmp_path / "broken"
    shutil.copytree(bundle.folder, broken)
    (broken / "ort" / "ort-training-wasm-simd-threaded.wasm").unlink()
    with web_bundle_server(broken) as server:
        page = browser.new_page()
        page.goto(server.url + "?autostart=1")
        state = wait_for(page, "false", timeout=30)
        assert state["status"] == "error" and state["step"] == 0
        assert "The bundle is missing ort/ort-training-wasm-simd-threaded.wasm (HTTP 404)" in state["error"]
        assert "ortnb edge web ARTIFACTS OUT" in page.inner_text("#problem")
        page.close()
    for name, change in (("ort.training.wasm.min.js", b"\nconsole.log('changed');\n"),
                         ("ort-training-wasm-simd-threaded.mjs", b"\n// changed\n"),
                         ("ort-training-wasm-simd-threaded.wasm", b"\0")):
        tampered = tmp_path / f"tampered-{name}"
        shutil.copytree(bundle.folder, tampered)
        with open(tampered / "ort" / name, "ab") as file:
            file.write(change)
        with web_bundle_server(tampered) as server:
            page = browser.new_page()
            page.goto(server.url + "?autostart=1")
            state = wait_for(page, "false", timeout=30)
            assert state["status"] == "error" and state["step"] == 0, (name, state)
            assert f"ort/{name} does not match the sha512 ortnb pinned for ONNX Runtime Web 1.19.2" in state["error"]
            assert "`ortnb setup --web --force`" in page.inner_text("#problem")
            page.close()
    with web_bundle_server(bundle.folder) as server:
        context = browser.new_context()
        # As a browser without SIMD answers: the probe module does not validate.
        context.add_init_script("WebAssembly.validate = () => false;")
        page = context.new_page()
        page.goto(server.url + "?autostart=1")
        state = wait_for(page, "false", timeout=30)
        assert state["status"] == "error" and state["simd"] is False and state["step"] == 0
        assert "no WebAssembly SIMD" in state["error"]
        context.close()


def test_the_pages_pure_functions_on_exact_values(browser, made):
    """rows.js in the browser that runs it: padding, labels, files, the row order for typed rows, softmax."""
    _, bundle, _, _ = made
    with bundle.serve() as server:
        page = browser.new_page()
        page.goto(server.url)
        found = page.evaluate('''async () => {
            const m = await import('./rows.js');
            const padded = m.pad([[101, 7, 102], [101, 102]], 0, 8);
            const attempt = (f) => { try { return f(); } catch (e) { return e.message; } };
            const epochs = [1, 2, 3, 4].map((step) => m.batchIndices(6, 3, 0, step));
            return {
                width: padded.width, ids: Array.from(padded.ids, Number), mask: Array.from(padded.mask, Number),
                labels: [m.labelId('pos', ['neg', 'pos']), m.labelId(' 1 ', ['neg', 'pos']), m.labelId(1, ['neg', 'pos']),
                         m.labelId(2, ['neg', 'pos']), m.labelId('1.0', ['neg', 'pos']), m.labelId(true, ['neg', 'pos'])],
                csv: m.parseFile('a.csv', '\\uFEFFtext,label\\r\\n"good, really",pos\\r\\n"say ""hi""",0\\r\\n\\r\\n'),
                jsonl: m.parseFile('a.jsonl', '{"text": "x", "label": 1}\\n\\n{"text": "y", "label": 0}\\n'),
                badJson: attempt(() => m.parseFile('a.jsonl', '{"text": "x"}\\nnot json\\n')),
                badKind: attempt(() => m.parseFile('a.txt', 'hello')),
                checked: m.checkRows('a.csv', [{at: 'line 2', row: {text: 'fine', label: 'pos'}}], ['neg', 'pos']),
                noText: attempt(() => m.checkRows('a.csv', [{at: 'line 2', row: {text: ' ', label: 'pos'}}], ['neg', 'pos'])),
                epochs, softmax: m.softmax([0, Math.log(3)]),
            };
        }''')
        page.close()
    assert found["width"] == 8
    assert found["ids"] == [101, 7, 102, 0, 0, 0, 0, 0, 101, 102, 0, 0, 0, 0, 0, 0]
    assert found["mask"] == [1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0]
    assert found["labels"] == [1, 1, 1, None, None, None]  # names, whole numbers in range; never 1.0 or true
    assert found["csv"] == [{"at": "line 2", "row": {"text": "good, really", "label": "pos"}},
                            {"at": "line 3", "row": {"text": 'say "hi"', "label": "0"}}]
    assert [r["at"] for r in found["jsonl"]] == ["line 1", "line 3"]
    assert found["badJson"] == "a.jsonl line 2 is not JSON"
    assert found["badKind"] == "a.txt: give a .jsonl, .json or .csv file"
    assert found["checked"] == [{"text": "fine", "label": 1}]
    assert found["noText"] == "a.csv line 2 has no text in its 'text' column"
    # Two steps of 3 make an epoch of 6: each epoch meets every row once, in a seeded order.
    first, second = found["epochs"][0] + found["epochs"][1], found["epochs"][2] + found["epochs"][3]
    assert sorted(first) == sorted(second) == list(range(6)) and first != second
    assert found["softmax"] == pytest.approx([0.25, 0.75], abs=1e-12)
