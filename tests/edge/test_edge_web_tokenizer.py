"""The in-browser WordPiece tokenizer (ortnb/edge/web/tokenizer.js) against the Rust ``tokenizers``.

Pure tests: ``ortnb.edge.web_tokenizer.unsupported`` on the built-in tokenizer.json and on edited
copies, and the JavaScript's character tables (control characters, nonspacing marks, punctuation) read
back code point by code point from the installed Rust library, whose tables are older than current
Unicode. Browser tests (one chromium for all): the module in a page served from loopback gives the Rust
library's ids on 200 real snippets and on tricky strings, with the file's normalizer and with the other
BertNormalizer flags and post-processors; its normalizer and pre-tokenizer agree with Rust's on every
code point; its unsupported() agrees with Python's. The time to tokenize the 1,000 validation snippets
in the page is printed, not asserted.
"""

from __future__ import annotations

import copy
import functools
import http.server
import json
import re
import threading
import time
from pathlib import Path

import pytest

from ortnb.edge import web_tokenizer

WEB = Path(web_tokenizer.__file__).parent / "web"
MAX_LENGTH = 128
TRICKY = [
    "Café naïve résumé", "nai\u0308ve cafe\u0301 (decomposed)", "ÅNGSTRÖM", "Straße", "İstanbul", "ΣΑΣ ΟΔΥΣΣΕΥΣ",
    "我喜欢这部电影", "これはペンです、カタカナ", "한국어 영화 좋아요", "great 👍🏽 film", "🥺🫠 new emoji",
    "\x00a\x07b\u200bc", "a\x0bb\x0cc\x85d\ufeffe\u2028f", "tab\there\nnew\r\nline", "non\u00a0breaking\u3000space",
    "word\u200dword \u0890\u08e2 \U00013430", "[CLS] in text [SEP]", "foo[SEP]bar[MASK][PAD]x", "[cls] [Sep]",
    "a" * 150, "b" * 100, "c" * 101, "é" * 60, "e\u0301" * 60, "don't", "co-operate", "3.14", "$5", "«quoted»",
    "1,000,000 ½ ™ © ｆｕｌｌｗｉｄｔｈ", "e-mail: someone@example.com, http://x.y/z?q=1 #tag @user",
    "dash\u2e43new \U0001E95Eadlam punct\u166d", "\U00011938 \U000105c9 \U00016d68 newer decompositions",
    "", "   \t\n ", " ".join(["truncate"] * 300), "Hello, world!!! ...?!", "x\ue000private\U000f0000use",
]


@functools.lru_cache(maxsize=None)
def real_tokenizer_json() -> dict:
    from ortnb.assets import MODELS

    return json.loads((MODELS["minilm"].locate() / "tokenizer.json").read_text())


def edited(**parts) -> dict:
    """A copy of the built-in tokenizer.json with some top-level parts replaced."""
    return {**copy.deepcopy(real_tokenizer_json()), **parts}


def with_model(**fields) -> dict:
    tokenizer_json = edited()
    tokenizer_json["model"].update(fields)
    return tokenizer_json


def with_added_token_flag(content: str, flag: str) -> dict:
    tokenizer_json = edited()
    next(token for token in tokenizer_json["added_tokens"] if token["content"] == content)[flag] = True
    return tokenizer_json


def bert_normalizer(**flags) -> dict:
    return {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None,
            "lowercase": True, **flags}


def template(single: list) -> dict:
    post = copy.deepcopy(real_tokenizer_json()["post_processor"])
    post["single"] = single
    return post


CLS, SEQ_A, SEP = {"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, \
    {"SpecialToken": {"id": "[SEP]", "type_id": 0}}
BERT_PROCESSING = {"type": "BertProcessing", "sep": ["[SEP]", 102], "cls": ["[CLS]", 101]}
ROBERTA_PROCESSING = {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": True,
                      "add_prefix_space": True}

# (name, build the edited copy, the messages unsupported() must give)
CASES = [
    ("real file", edited, []),
    ("no normalizer", lambda: edited(normalizer=None), []),
    ("cased", lambda: edited(normalizer=bert_normalizer(lowercase=False)), []),
    ("BertProcessing", lambda: edited(post_processor=BERT_PROCESSING), []),
    ("no post-processor", lambda: edited(post_processor=None), []),
    ("BPE model", lambda: edited(model={"type": "BPE", "vocab": {"a": 0}, "merges": [], "unk_token": None}),
     ["model BPE (the page reads WordPiece)"]),
    ("ByteLevel pre-tokenizer", lambda: edited(pre_tokenizer={"type": "ByteLevel", "add_prefix_space": False,
                                                              "trim_offsets": True, "use_regex": True}),
     ["pre_tokenizer ByteLevel (the page reads BertPreTokenizer)"]),
    ("no pre-tokenizer", lambda: edited(pre_tokenizer=None), ["pre_tokenizer none (the page reads BertPreTokenizer)"]),
    ("RobertaProcessing", lambda: edited(post_processor=ROBERTA_PROCESSING),
     ["post_processor RobertaProcessing (the page reads TemplateProcessing, BertProcessing or none)"]),
    ("Sequence normalizer", lambda: edited(normalizer={"type": "Sequence", "normalizers": [{"type": "NFD"}]}),
     ["normalizer Sequence (the page reads BertNormalizer or none)"]),
    ("lowercase as a string", lambda: edited(normalizer=bert_normalizer(lowercase="yes")),
     ["normalizer BertNormalizer lowercase=yes (the page reads true or false)"]),
    ("unk_token not in the vocab", lambda: with_model(unk_token="<unk>"),
     ["model WordPiece unk_token <unk> is not in the vocab"]),
    ("template with $B", lambda: edited(post_processor=template([CLS, {"Sequence": {"id": "B", "type_id": 0}}, SEP])),
     ["post_processor TemplateProcessing single template needs exactly one $A"]),
    ("template with two $A", lambda: edited(post_processor=template([CLS, SEQ_A, SEP, SEQ_A])),
     ["post_processor TemplateProcessing single template needs exactly one $A"]),
    ("template with an unknown special token", lambda: edited(post_processor=template([{"SpecialToken": {
        "id": "<s>", "type_id": 0}}, SEQ_A, SEP])),
     ["post_processor TemplateProcessing special token <s> has no ids"]),
    ("lstrip added token", lambda: with_added_token_flag("[MASK]", "lstrip"),
     ["added token [MASK] lstrip=true (the page matches added tokens as they are, in the raw text)"]),
    ("normalized added token", lambda: with_added_token_flag("[PAD]", "normalized"),
     ["added token [PAD] normalized=true (the page matches added tokens as they are, in the raw text)"]),
    ("several at once", lambda: edited(model={"type": "Unigram", "vocab": [["a", 0.0]]},
                                      pre_tokenizer={"type": "Metaspace"}, post_processor=ROBERTA_PROCESSING),
     ["model Unigram (the page reads WordPiece)", "pre_tokenizer Metaspace (the page reads BertPreTokenizer)",
      "post_processor RobertaProcessing (the page reads TemplateProcessing, BertProcessing or none)"]),
]


@pytest.mark.parametrize(("build", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_unsupported(build, expected):
    assert web_tokenizer.unsupported(build()) == expected


def test_unsupported_not_an_object():
    assert web_tokenizer.unsupported(["not", "a", "dict"]) == ["not a tokenizer.json object"]


# ---------------------------------------------------------------------------------------------------
# The Rust library, code point by code point


@pytest.fixture(scope="module")
def rust_classes() -> dict:
    """How the Rust library treats each code point (surrogates aside), one BertNormalizer step at a time.

    clean / strip / lower: {code point: output} where the output differs from the char; chinese: the code
    points it spaces out; punct: those BertPreTokenizer isolates; space: those it splits on.
    """
    from tokenizers import normalizers, pre_tokenizers

    def only(**flag):
        return normalizers.BertNormalizer(**{"clean_text": False, "handle_chinese_chars": False,
                                             "strip_accents": False, "lowercase": False, **flag})

    steps = {"clean": only(clean_text=True), "strip": only(strip_accents=True), "lower": only(lowercase=True)}
    chinese, pre = only(handle_chinese_chars=True), pre_tokenizers.BertPreTokenizer()
    classes = {"clean": {}, "strip": {}, "lower": {}, "chinese": [], "punct": [], "space": []}
    for cp in (*range(0xD800), *range(0xE000, 0x110000)):
        char = chr(cp)
        for name, step in steps.items():
            out = step.normalize_str(char)
            if out != char:
                classes[name][cp] = out
        if chinese.normalize_str(char) != char:
            classes["chinese"].append(cp)
        words = len(pre.pre_tokenize_str(f"a{char}b"))
        if words != 1:
            classes["punct" if words == 3 else "space"].append(cp)
    return classes


def js_table(name: str) -> set[int]:
    """The code points of one of tokenizer.js's ranges("...") tables."""
    source = (WEB / "tokenizer.js").read_text()
    match = re.search(rf'const {name} = ranges\(((?:\s*"[^"]*"\s*\+?)+)\);', source)
    text = "".join(re.findall(r'"([^"]*)"', match.group(1)))
    points = set()
    for part in text.split():
        low, _, high = part.partition("-")
        points.update(range(int(low, 16), int(high or low, 16) + 1))
    return points


@pytest.mark.slow  # every code point through the Rust library: 4 s: the pure tier stays under 45 s
def test_character_tables_are_the_rust_librarys(rust_classes):
    """tokenizer.js carries the Rust library's own (Unicode 8.0) tables: they must still be its tables."""
    import unicodedata

    from tokenizers import normalizers

    removed = {cp for cp, out in rust_classes["clean"].items() if out == ""}
    assert js_table("RUST_CONTROL") == removed
    assert js_table("RUST_NONSPACING_MARK") == {cp for cp, out in rust_classes["strip"].items() if out == ""}
    assert js_table("RUST_PUNCTUATION") == set(rust_classes["punct"])
    # Characters the Rust NFD leaves whole: it must still leave them whole, and every one that this
    # Python's (older than a browser's) Unicode decomposes and Rust does not must be listed.
    nfd, whole = normalizers.NFD(), js_table("RUST_NO_DECOMPOSITION")
    assert all(nfd.normalize_str(chr(cp)) == chr(cp) for cp in whole)
    newer = {cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF
             and unicodedata.normalize("NFD", chr(cp)) != chr(cp) and nfd.normalize_str(chr(cp)) == chr(cp)}
    assert newer <= whole


# ---------------------------------------------------------------------------------------------------
# In the browser


class _Handler(http.server.SimpleHTTPRequestHandler):
    """ortnb/edge/web/ as it is, the built-in tokenizer.json at /tokenizer.json, and an empty page at
    /blank.html (the folder's index.html is the training page, which is not under test here)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=str(WEB), **kwargs)

    def do_GET(self):
        if self.path != "/blank.html":
            return super().do_GET()
        body = b"<!doctype html><meta charset='utf-8'><title>tokenizer test</title>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def translate_path(self, path):
        if path.split("?")[0] == "/tokenizer.json":
            from ortnb.assets import MODELS

            return str(MODELS["minilm"].locate() / "tokenizer.json")
        return super().translate_path(path)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def page():
    """One chromium page with the module imported as window.tok and the tokenizer.json as window.base."""
    from ..lab_driver import BROWSER_FLAGS, CHROMIUM, require_chromium

    require_chromium()
    from playwright.sync_api import sync_playwright

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_FLAGS, headless=True)
            try:
                page = browser.new_page()
                page.goto(f"http://127.0.0.1:{server.server_address[1]}/blank.html")
                page.evaluate("""async () => {
                    window.tok = await import('/tokenizer.js');
                    window.base = await (await fetch('/tokenizer.json')).json();
                }""")
                yield page
            finally:
                browser.close()
    finally:
        server.shutdown()
        server.server_close()


def js_encode(page, texts: list[str], max_length: int | None, parts: dict | None = None) -> list[list[int]]:
    """Ids from the page, for the built-in tokenizer.json with some top-level parts replaced."""
    return page.evaluate("""([texts, maxLength, parts]) => {
        const tokenizer = tok.WordPieceTokenizer.fromJSON({...base, ...parts});
        return texts.map((text) => tokenizer.encode(text, maxLength ?? undefined));
    }""", [texts, max_length, parts or {}])


def rust_encode(texts: list[str], max_length: int | None, parts: dict | None = None) -> list[list[int]]:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(json.dumps(edited(**(parts or {}))))
    tokenizer.no_padding()
    if max_length is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_length)
    return [encoding.ids for encoding in tokenizer.encode_batch(texts)]


def assert_same_ids(page, texts: list[str], max_length: int | None, parts: dict | None = None) -> None:
    js, rust = js_encode(page, texts, max_length, parts), rust_encode(texts, max_length, parts)
    wrong = [f"{text!r}\n  page: {got}\n  rust: {want}" for text, got, want in zip(texts, js, rust) if got != want]
    assert not wrong, f"{len(wrong)} of {len(texts)} differ (max_length {max_length}, {parts}):\n" + "\n".join(wrong[:5])


@functools.lru_cache(maxsize=None)
def snippets(start: int, stop: int) -> tuple[str, ...]:
    from ortnb.assets import rotten_tomatoes_frame

    return tuple(rotten_tomatoes_frame().iloc[start:stop]["text"])


@pytest.mark.browser
def test_ids_match_rust(page):
    assert_same_ids(page, list(snippets(1000, 1200)), MAX_LENGTH)
    for max_length in (MAX_LENGTH, 8, None):
        assert_same_ids(page, TRICKY, max_length)


@pytest.mark.browser
@pytest.mark.parametrize("parts", [
    {"normalizer": bert_normalizer(lowercase=False)},  # cased: strip_accents null follows lowercase
    {"normalizer": bert_normalizer(lowercase=False, strip_accents=True)},
    {"normalizer": bert_normalizer(strip_accents=False)},
    {"normalizer": bert_normalizer(clean_text=False)},
    {"normalizer": bert_normalizer(handle_chinese_chars=False)},
    {"normalizer": None},
    {"post_processor": BERT_PROCESSING},
    {"post_processor": None},
    {"post_processor": {"type": "TemplateProcessing", "single": [CLS, CLS, SEQ_A, {"SpecialToken": {
        "id": "[MASK]", "type_id": 0}}], "pair": [], "special_tokens": {
        "[CLS]": {"id": "[CLS]", "ids": [101], "tokens": ["[CLS]"]},
        "[MASK]": {"id": "[MASK]", "ids": [103, 102], "tokens": ["[MASK]", "[SEP]"]}}}},
], ids=["cased", "cased-strip", "no-strip", "no-clean", "no-chinese", "no-normalizer", "BertProcessing",
        "no-post-processor", "own-template"])
def test_other_configurations_match_rust(page, parts):
    assert_same_ids(page, list(snippets(1000, 1100)) + TRICKY, MAX_LENGTH, parts)
    assert_same_ids(page, TRICKY, 8, parts)


@pytest.mark.browser
def test_every_code_point_matches_rust(page, rust_classes):
    """The page's normalizer steps and pre-tokenizer on each code point alone, against Rust's."""
    js = page.evaluate("""() => {
        const only = (flag) => tok.WordPieceTokenizer.fromJSON({...base, normalizer: {type: 'BertNormalizer',
            clean_text: false, handle_chinese_chars: false, strip_accents: false, lowercase: false, [flag]: true}});
        const steps = {clean: only('clean_text'), strip: only('strip_accents'), lower: only('lowercase')};
        const chinese = only('handle_chinese_chars');
        const classes = {clean: {}, strip: {}, lower: {}, chinese: [], punct: [], space: []};
        for (let cp = 0; cp < 0x110000; cp++) {
            if (cp === 0xD800) cp = 0xE000;
            const char = String.fromCodePoint(cp);
            for (const [name, step] of Object.entries(steps)) {
                const out = step.normalize(char);
                if (out !== char) classes[name][cp] = out;
            }
            if (chinese.normalize(char) !== char) classes.chinese.push(cp);
            const words = chinese.preTokenize('a' + char + 'b').length;
            if (words !== 1) classes[words === 3 ? 'punct' : 'space'].push(cp);
        }
        return classes;
    }""")
    for name, want in rust_classes.items():
        got = {int(cp): out for cp, out in js[name].items()} if isinstance(want, dict) else js[name]
        if got != want:
            keys = sorted(set(got) ^ set(want)) if isinstance(want, list) else \
                sorted(cp for cp in set(got) | set(want) if got.get(cp) != want.get(cp))
            pytest.fail(f"{name}: the page and Rust differ on {len(keys)} code points, first "
                        + ", ".join(f"U+{cp:04X}" for cp in keys[:10]))


@pytest.mark.browser
def test_page_details(page):
    from tokenizers import Tokenizer

    details = page.evaluate("""() => {
        const tokenizer = tok.WordPieceTokenizer.fromJSON(base);
        let refused;
        try {
            tok.WordPieceTokenizer.fromJSON({...base, model: {type: 'BPE', vocab: {}, merges: []},
                                             pre_tokenizer: {type: 'ByteLevel'}});
        } catch (error) {
            refused = error.message;
        }
        const refusals = [1, 2.5].map((maxLength) => {
            try { tokenizer.encode('hello', maxLength); } catch (error) { return error.message; }
        });
        // A lone surrogate cannot reach the Rust library; the page reads it as U+FFFD.
        const lone = tokenizer.encode('a' + String.fromCharCode(0xD800) + 'b' + String.fromCharCode(0xDC00));
        return {vocabSize: tokenizer.vocabSize, refused, refusals, lone};
    }""")
    assert details["vocabSize"] == Tokenizer.from_str(json.dumps(real_tokenizer_json())).get_vocab_size()
    assert details["refused"] == ("tokenizer.json not supported: model BPE (the page reads WordPiece); "
                                  "pre_tokenizer ByteLevel (the page reads BertPreTokenizer)")
    assert details["refusals"] == [f"maxLength must be a whole number of at least 2 (the special tokens), not {n}"
                                   for n in (1, 2.5)]
    assert details["lone"] == rust_encode(["a\ufffdb\ufffd"], None)[0]


@pytest.mark.browser
def test_unsupported_agrees_with_python(page):
    # A small vocab keeps the copies small: unsupported() does not read the vocab beyond the unk_token.
    def small(tokenizer_json: dict) -> dict:
        model = tokenizer_json.get("model")
        if isinstance(model, dict) and isinstance(model.get("vocab"), dict):
            model["vocab"] = {token: id for token, id in model["vocab"].items() if token in ("[UNK]", "hello")}
        return tokenizer_json

    copies = [small(build()) for _, build, _ in CASES]
    got = page.evaluate("(copies) => copies.map((copy) => tok.unsupported(copy))", copies)
    assert got == [web_tokenizer.unsupported(copy) for copy in copies] == [expected for *_, expected in CASES]
    assert page.evaluate("() => tok.unsupported(['not', 'a', 'dict'])") == ["not a tokenizer.json object"]


@pytest.mark.browser
def test_validation_timing(page):
    """Tokenize the 1,000 validation snippets in the page (printed, not asserted); their ids must match too."""
    from ortnb.assets import ROTTEN_TOMATOES_VALIDATION

    texts = list(snippets(0, ROTTEN_TOMATOES_VALIDATION))
    timing = page.evaluate("""([texts, maxLength]) => {
        const started = performance.now();
        const tokenizer = tok.WordPieceTokenizer.fromJSON(base);
        const built = performance.now();
        const ids = texts.map((text) => tokenizer.encode(text, maxLength));
        const first = performance.now();
        texts.forEach((text) => tokenizer.encode(text, maxLength));
        return {build: built - started, first: first - built, second: performance.now() - first, ids};
    }""", [texts, MAX_LENGTH])
    start = time.perf_counter()
    rust = rust_encode(texts, MAX_LENGTH)
    rust_ms = (time.perf_counter() - start) * 1e3
    print(f"\n{len(texts)} validation snippets in the page: fromJSON {timing['build']:.1f} ms, encode "
          f"{timing['first']:.1f} ms (again: {timing['second']:.1f} ms); Rust encode_batch {rust_ms:.1f} ms")
    assert sum(got == want for got, want in zip(timing["ids"], rust)) == len(texts)
