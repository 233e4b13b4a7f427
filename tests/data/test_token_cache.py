"""The tokenized-data cache (data/token_cache.py): a second prepare of the same data reads what the first stored and
tokenizes nothing; another file content, tokenizer or setting is another entry; a damaged entry is said once
and tokenized again; a run records whether its data came from the cache."""

from __future__ import annotations

import json

import pytest

from ortnb import assets, data
from ortnb.data import preparation, token_cache

CSV = "text,label\n" + "".join(f"\"snippet number {i} is {'good' if i % 2 else 'bad'}\",{i % 2}\n" for i in range(40))


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(assets.MODELS["minilm"].locate()))


@pytest.fixture
def counted(monkeypatch):
    """How many times the data was really tokenized."""
    calls = []
    real = data.prepare

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(preparation, "prepare", counting)  # what the cache calls when it tokenizes
    return calls


def prepare(dataset, tokenizer, root, **overrides):
    settings = dict(plan=data.EvalPlan(enabled=True, fraction=0.25), seed=0, padding="longest", root=root,
                    labels=data.labels_for(str(dataset), "sequence-classification"))
    return token_cache.prepare(str(dataset), "sequence-classification", tokenizer, 32, **{**settings, **overrides})


def test_the_second_prepare_reads_the_stored_entry_and_tokenizes_nothing(tmp_path, tokenizer, counted):
    rows = tmp_path / "rows.csv"
    rows.write_text(CSV)
    first = prepare(rows, tokenizer, tmp_path / "cache")
    second = prepare(rows, tokenizer, tmp_path / "cache")
    assert (first.hit, second.hit, len(counted)) == (False, True, 1)
    assert first.key == second.key and second.path == tmp_path / "cache" / first.key
    assert second.prepared.train["input_ids"] == first.prepared.train["input_ids"]
    assert second.prepared.train["labels"] == first.prepared.train["labels"]
    assert second.prepared.evaluation["input_ids"] == first.prepared.evaluation["input_ids"]
    assert second.prepared.eval_texts == first.prepared.eval_texts and len(second.prepared.eval_texts) == 10
    assert second.record() == {"cached": True, "cache_key": first.key, "seconds": second.record()["seconds"],
                               "note": None, "train_rows": 30, "eval_rows": 10}


@pytest.mark.slow  # tokenizes the real dataset for each bucket: 2 s each: the pure tier stays under 45 s
@pytest.mark.parametrize("bucket", [8, token_cache.MIN_BUCKET])  # 8: the entry is itself a shuffled selection
def test_runs_of_other_lengths_share_one_entry_and_get_exactly_their_own_rows(tmp_path, tokenizer, counted,
                                                                            monkeypatch, bucket):
    monkeypatch.setattr(token_cache, "MIN_BUCKET", bucket)
    rows = tmp_path / "rows.csv"
    rows.write_text(CSV)  # 30 training rows after the held-out quarter
    settings = dict(plan=data.EvalPlan(enabled=True, fraction=0.25), seed=3, padding="longest",
                    labels=data.labels_for(str(rows), "sequence-classification"))
    found = {n: prepare(rows, tokenizer, tmp_path / "cache", seed=3, train_samples=n) for n in (5, 7, None, 30)}
    # 5 and 7 share a bucket; all rows (None) is an entry of its own; 30 shares the first bucket unless it is 8
    assert [f.hit for f in found.values()] == [False, True, False, bucket > 30]
    for n, lookup in found.items():
        direct = data.prepare(str(rows), "sequence-classification", tokenizer, 32, train_samples=n, **settings)
        assert lookup.prepared.train["input_ids"] == direct.train["input_ids"], n  # the same rows, in order
        assert lookup.prepared.train["labels"] == direct.train["labels"]
        assert len(lookup.prepared.train) == (n or 30) and lookup.record()["train_rows"] == (n or 30)
    assert token_cache.rows_bucket(None) is None and token_cache.rows_bucket(bucket + 1) == 2 * bucket


@pytest.mark.slow  # six entries tokenized for real: 2 s: the pure tier stays under 45 s
def test_an_edited_file_another_setting_or_tokenizer_is_another_entry(tmp_path, tokenizer, counted):
    rows = tmp_path / "rows.csv"
    rows.write_text(CSV)
    root = tmp_path / "cache"
    keys = {prepare(rows, tokenizer, root).key}
    rows.write_text(CSV.replace("number 3 is good", "number 3 is great"))  # same size class, same name
    edited = prepare(rows, tokenizer, root)
    decoded = [tokenizer.decode(ids) for ids in edited.prepared.train["input_ids"]] + edited.prepared.eval_texts
    assert not edited.hit and any("great" in text for text in decoded)  # the edit, not the stored rows
    keys.add(edited.key)
    keys.add(prepare(rows, tokenizer, root, padding="max_length").key)
    keys.add(prepare(rows, tokenizer, root, seed=1).key)
    keys.add(prepare(rows, tokenizer, root, plan=data.EvalPlan(enabled=False)).key)
    other = tokenizer.__class__.from_pretrained(str(assets.MODELS["minilm"].locate()), model_max_length=16)
    keys.add(prepare(rows, other, root).key)
    assert len(keys) == 6 and len(counted) == 6


@pytest.mark.slow  # tokenizes the real dataset twice: the pure tier stays under 45 s
def test_a_damaged_entry_is_said_once_and_tokenized_again(tmp_path, tokenizer, counted):
    rows = tmp_path / "rows.csv"
    rows.write_text(CSV)
    root = tmp_path / "cache"
    first = prepare(rows, tokenizer, root)
    (first.path / token_cache.ENTRY).write_text('{"format": 1, "train_ro')  # cut short
    again = prepare(rows, tokenizer, root)
    assert not again.hit and again.note.startswith(f"the tokenized-data cache entry {first.path} was damaged (")
    assert again.note.endswith("tokenized the data again")
    for arrow in (first.path / "train").glob("*.arrow"):
        arrow.write_bytes(b"not arrow")
    broken = prepare(rows, tokenizer, root)
    assert not broken.hit and "was damaged" in broken.note
    last = prepare(rows, tokenizer, root)
    assert last.hit and last.note is None and len(counted) == 3


def test_what_cannot_be_identified_is_tokenized_and_not_stored(tmp_path, tokenizer, counted, monkeypatch):
    from datasets import Dataset

    assert token_cache.tokenizer_identity(object()) is None  # no tokenizers backend to serialize
    before = token_cache.tokenizer_identity(tokenizer)
    tokenizer(["a long enough text"], truncation=True, max_length=4, padding="max_length")
    assert token_cache.tokenizer_identity(tokenizer) == before  # a call's truncation does not change it
    rows = tmp_path / "rows.csv"
    rows.write_text(CSV)
    monkeypatch.setattr(token_cache, "tokenizer_identity", lambda _tokenizer: None)
    found = prepare(rows, tokenizer, tmp_path / "cache")
    assert (found.hit, found.key, found.path) == (False, None, None) and not (tmp_path / "cache").exists()
    in_memory = Dataset.from_dict({"text": ["a", "b"], "label": [0, 1]})
    assert token_cache.data_identity(in_memory).startswith("dataset:")  # datasets' own content fingerprint
    assert token_cache.data_identity(str(tmp_path / "missing.csv")) is None


def test_only_the_most_recently_used_entries_are_kept(tmp_path):
    import os

    root = tmp_path / "cache"
    for index in range(5):
        entry = root / f"entry{index}"
        entry.mkdir(parents=True)
        (entry / token_cache.ENTRY).write_text(json.dumps({"format": 1}))
        os.utime(entry / token_cache.ENTRY, (1000 + index, 1000 + index))
    (root / ".half.123.tmp").mkdir()  # a store in progress is not an entry
    assert token_cache.prune(root, keep=3) == ["entry0", "entry1"]
    assert sorted(p.name for p in root.iterdir()) == [".half.123.tmp", "entry2", "entry3", "entry4"]


@pytest.mark.slow
def test_a_second_run_on_the_same_data_reads_its_tokens_from_the_cache(tmp_path):
    import uuid

    import ortnb

    rows = tmp_path / "rows.csv"  # content of its own: a key no earlier test stored
    rows.write_text(CSV + f"\"this test's own row {uuid.uuid4()}\",1\n")
    config = ortnb.RunConfig(model="tiny-bert", dataset=str(rows), backend="eager", batch_size=8, seq_len=32,
                             max_steps=3, warmup_steps=1, evaluate=True, output_dir=str(tmp_path / "runs"))
    runs = []
    for _ in range(2):
        runs.append(ortnb.launch(config))
        assert runs[-1].wait(300) == "completed", runs[-1].error
    first, second = ([e for e in run.events if e["event"] == "data"] for run in runs)
    assert [first[0]["cached"], second[0]["cached"]] == [False, True]
    assert first[0]["cache_key"] == second[0]["cache_key"] and first[0]["train_rows"] == second[0]["train_rows"] == 24
    assert second[0]["eval_rows"] == 4 and len(first) == len(second) == 1


def test_an_entry_edited_in_place_is_said_in_one_line_and_tokenized_again(tmp_path, tokenizer, counted):
    # The user's case: the stored rows loaded, their labels flipped and saved back over the entry's train/.
    from datasets import load_from_disk

    rows = tmp_path / "rows.csv"
    rows.write_text(CSV)
    root = tmp_path / "cache"
    first = prepare(rows, tokenizer, root)
    stored = load_from_disk(str(first.path / "train"))
    flipped = stored.map(lambda row: {"labels": 1 - row["labels"]}, keep_in_memory=True)
    flipped.save_to_disk(str(tmp_path / "flipped"))
    del stored
    import shutil
    shutil.rmtree(first.path / "train")
    shutil.move(str(tmp_path / "flipped"), str(first.path / "train"))
    again = prepare(rows, tokenizer, root)
    assert not again.hit and len(counted) == 2
    assert again.note == (f"the tokenized-data cache entry {first.path} was damaged or edited after it was written "
                          "(its content no longer matches the hash it recorded); tokenized the data again")
    assert "\n" not in again.note
    assert again.prepared.train["labels"] == first.prepared.train["labels"]  # the file's labels, not the flipped ones
    last = prepare(rows, tokenizer, root)
    assert last.hit and last.note is None and last.prepared.train["labels"] == first.prepared.train["labels"]


def test_the_held_out_texts_in_entry_json_are_part_of_the_hash(tmp_path, tokenizer, counted):
    rows = tmp_path / "rows.csv"
    rows.write_text(CSV)
    root = tmp_path / "cache"
    first = prepare(rows, tokenizer, root)
    entry = json.loads((first.path / token_cache.ENTRY).read_text())
    (first.path / token_cache.ENTRY).write_text(json.dumps({**entry, "eval_texts": ["edited"] * 10}))
    again = prepare(rows, tokenizer, root)
    assert not again.hit and "was damaged or edited after it was written" in again.note
    assert again.prepared.eval_texts == first.prepared.eval_texts


def test_a_mapped_column_is_another_entry(tmp_path, tokenizer, counted):
    from ortnb.data.columns import Columns

    rows = tmp_path / "rows.csv"
    rows.write_text(CSV.replace("text,label", "text,label,review", 1).replace("\n", ",x\n").replace(
        "text,label,review,x\n", "text,label,review\n", 1))
    mapped = Columns(text="review")
    plain = prepare(rows, tokenizer, tmp_path / "cache")
    other = prepare(rows, tokenizer, tmp_path / "cache", columns=mapped,
                    labels=data.labels_for(str(rows), "sequence-classification", mapped))
    assert plain.key != other.key and not other.hit
    assert set(other.prepared.eval_texts) == {"x"}
