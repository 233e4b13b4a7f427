// The page of an ortnb web bundle: ONNX Runtime Web's training API on the artifacts ortnb.edge exported.
// Everything a script (or a test) needs to know is in window.ortnbEdge; the DOM only renders it.
import { WordPieceTokenizer } from "./tokenizer.js";
import { drawLoss } from "./chart.js";
import { batchIndices, checkRows, pad, parseFile, softmax } from "./rows.js";

const EVAL_BATCH = 16; // as ortnb.edge evaluates: activation memory grows with the batch
// The smallest module using a SIMD instruction (wasm-feature-detect's test): ORT Web 1.19.2's training build
// needs WebAssembly SIMD and fails inside its loader without it.
const SIMD_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0,
  65, 0, 253, 15, 253, 98, 11]);

const state = {
  status: "loading", // loading | ready | training | evaluating | error
  step: 0, // optimizer steps taken in this tab
  losses: [],
  evaluations: [],
  predictions: [],
  error: null, // the last problem: fatal when status is "error", otherwise bad input that trained nothing
  rows: 0, source: null, round: 0, downloads: 0,
  threads: 1, isolated: self.crossOriginIsolated === true, simd: null,
  timings: { ready_ms: null, first_step_ms: null, step_ms: [] },
};
window.ortnbEdge = state;

const $ = (id) => document.getElementById(id);
let bundle, tokenizer, session, stopAsked = false, roundStep = 0;
let trainRows = [], bundledBatches = null, evalRows = [];
const idCache = new Map();

function render() {
  const busy = ["loading", "training", "evaluating", "error"].includes(state.status);
  $("status").textContent = statusLine();
  $("problem").hidden = !state.error;
  $("problem").textContent = state.error ?? "";
  $("train").disabled = busy;
  $("stop").disabled = state.status !== "training";
  $("evaluate").disabled = busy || !(evalRows.length || trainRows.length);
  $("predict").disabled = busy;
  $("download").disabled = busy;
  $("add-example").disabled = state.status === "loading" || state.status === "error";
  $("step-counter").textContent = bundle && state.round
    ? `step ${state.step} (this Train: ${roundStep} of ${bundle.training.steps})` : `step ${state.step}`;
  const times = state.timings.step_ms.slice(2); // the first steps plan memory: left out, as ortnb's runs do
  $("step-time").textContent = times.length ? `${median(times).toFixed(0)} ms a step (median)` : "";
  $("data-summary").textContent = trainRows.length ? `${trainRows.length} rows (${state.source})` +
    (evalRows.length ? `; ${evalRows.length} held out` : "") : "No rows yet: load a file or add examples.";
  drawLoss($("loss-chart"), state.losses);
  const body = $("evaluations").querySelector("tbody");
  body.replaceChildren(...state.evaluations.map((e) => {
    const tr = document.createElement("tr");
    for (const value of [e.step, `${e.samples} ${e.on}`, e.eval_loss.toFixed(4), e.accuracy.toFixed(3)]) {
      const td = document.createElement("td");
      td.textContent = value;
      tr.append(td);
    }
    return tr;
  }));
}

function statusLine() {
  switch (state.status) {
    case "loading": return "Loading ONNX Runtime Web…";
    case "training": return `Training: step ${state.step}`;
    case "evaluating": return "Evaluating…";
    case "error": return "This page cannot train (see below).";
    default: return state.step ? `Trained ${state.step} steps; last loss ${state.losses.at(-1).toFixed(4)}.`
      : `Ready in ${(state.timings.ready_ms / 1000).toFixed(1)} s, on ${state.threads} thread` +
        `${state.threads > 1 ? "s" : ""}${state.isolated ? "" : " (not cross-origin isolated)"}.`;
  }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b), middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

function fail(message) {
  state.status = "error";
  state.error = message;
  render();
}

function refuse(message) { // bad input: said, nothing trained, the page stays usable
  state.error = message;
  render();
}

async function boot() {
  if (!WebAssembly.validate(SIMD_PROBE)) {
    state.simd = false;
    return fail("This browser has no WebAssembly SIMD, which ONNX Runtime Web 1.19.2's training build needs. " +
      "Use a current Chrome, Edge or Firefox, or Safari 16.4 or later.");
  }
  state.simd = true;
  bundle = await fetchJson("bundle.json", "the bundle's description");
  const runtime = bundle.runtime;
  const needed = [...runtime.files.map((f) => `${runtime.folder}/${f}`), ...Object.values(bundle.artifacts),
    ...(bundle.data ? [bundle.data] : []), ...(bundle.eval_data ? [bundle.eval_data] : [])];
  const absent = [];
  for (const path of needed) {
    const response = await fetch(path, { method: "HEAD", cache: "no-store" });
    if (!response.ok) absent.push(`${path} (HTTP ${response.status})`);
  }
  if (absent.length) {
    return fail(`The bundle is missing ${absent.join(", ")}. Write it again with ortnb.edge.web_bundle(...) or ` +
      "`ortnb edge web ARTIFACTS OUT`, and serve the whole folder.");
  }
  await loadRuntime(runtime);
  // Worker threads need SharedArrayBuffer, which only a cross-origin isolated page has: elsewhere ORT Web would
  // drop to one thread on its own, and the page would report threads it does not use.
  const threads = state.isolated ? (bundle.training.threads ?? Math.min(4, navigator.hardwareConcurrency || 1)) : 1;
  ort.env.wasm.numThreads = threads;
  ort.env.logLevel = "error"; // not a warning per dropout constant the graph optimizer removes
  ort.env.wasm.wasmPaths = new URL(`${runtime.folder}/`, location.href).href;
  state.threads = threads;
  tokenizer = WordPieceTokenizer.fromJSON(await fetchJson(bundle.artifacts["tokenizer.json"], "the tokenizer"));
  session = await createSession();
  if (bundle.data) {
    const data = await fetchJson(bundle.data, "the bundled rows");
    useRows(data.rows, "bundled", data.batches);
  }
  if (bundle.eval_data) evalRows = (await fetchJson(bundle.eval_data, "the held-out rows")).rows;
  describeModel();
  state.timings.ready_ms = performance.now(); // from the start of navigation
  state.status = "ready";
  render();
  if (new URLSearchParams(location.search).get("autostart") === "1") {
    await train();
    if (state.status === "ready" && !state.error) await evaluate();
  }
}

async function createSession() {
  const a = bundle.artifacts;
  // Severity 3 (errors only): at 2, the default, ORT logs "Removing initializer" to the console as an error for
  // every constant its graph optimizer drops (the dropout ratios), which is routine, not a fault.
  return ort.TrainingSession.create({
    checkpointState: a.checkpoint, trainModel: a["training_model.onnx"], evalModel: a["eval_model.onnx"],
    optimizerModel: a["optimizer_model.onnx"],
  }, { logSeverityLevel: 3, logVerbosityLevel: 0 });
}

// ONNX Runtime Web runs only as pinned: each file's sha512 comes from bundle.json (ortnb's
// web_runtime.FILE_INTEGRITY, not the copied files' own), and the browser refuses a file that differs. The API
// script loads with an integrity attribute, the loader is preloaded with one (ORT's import of it then takes the
// checked module), and the wasm is fetched with one and handed to ORT as bytes, so ORT fetches no unchecked copy.
async function loadRuntime(runtime) {
  const path = (name) => `${runtime.folder}/${name}`;
  const pinned = runtime.integrity;
  const refused = (name) => new Error(`${path(name)} does not match the sha512 ortnb pinned for ONNX Runtime Web ` +
    `${bundle.onnxruntime_web} (it changed after the bundle was written), so the page will not run it. Write the ` +
    "bundle again with `ortnb edge web ARTIFACTS OUT` (it checks ONNX Runtime Web's files; " +
    "`ortnb setup --web --force` fetches them again).");
  await loadScript(path(runtime.script), pinned[runtime.script]).catch(() => { throw refused(runtime.script); });
  await preloadModule(path(runtime.loader), pinned[runtime.loader]).catch(() => { throw refused(runtime.loader); });
  const wasm = await fetch(path(runtime.wasm), { integrity: pinned[runtime.wasm], cache: "no-store" })
    .catch(() => { throw refused(runtime.wasm); });
  ort.env.wasm.wasmBinary = await wasm.arrayBuffer();
}

async function fetchJson(path, what) {
  const response = await fetch(path, { cache: "no-store" });
  if (!response.ok) throw new Error(`${what} (${path}) did not load: HTTP ${response.status}`);
  return response.json();
}

function loadScript(src, integrity) {
  return new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.integrity = integrity;
    script.src = src;
    script.onload = resolve;
    script.onerror = () => reject(new Error(`${src} did not load`));
    document.head.append(script);
  });
}

function preloadModule(href, integrity) {
  return new Promise((resolve, reject) => {
    const link = document.createElement("link");
    link.rel = "modulepreload";
    link.integrity = integrity;
    link.href = href;
    link.onload = resolve;
    link.onerror = () => reject(new Error(`${href} did not load`));
    document.head.append(link);
  });
}

function describeModel() {
  const m = bundle.model, t = bundle.training;
  const facts = [["model", m.source || "(in the artifacts)"], ["labels", m.labels.join(", ")],
    ["training", `${m.selection}: ${m.trainable_parameters.toLocaleString()} weights of ` +
      `${(m.trainable_parameters + m.frozen_parameters).toLocaleString()}`],
    ["each Train", `${t.steps} steps, each learning from ${t.batch_size} rows`],
    ["ONNX Runtime Web", `${bundle.onnxruntime_web}, ${state.threads} thread${state.threads > 1 ? "s" : ""}` +
      (state.isolated ? " (cross-origin isolated)" : " (one thread: the page is not cross-origin isolated)")]];
  $("model-facts").replaceChildren(...facts.flatMap(([term, value]) => {
    const dt = document.createElement("dt"), dd = document.createElement("dd");
    dt.textContent = term;
    dd.textContent = value;
    return [dt, dd];
  }));
  $("example-label").replaceChildren(...m.labels.map((label, i) => new Option(label, String(i))));
  $("schedule").textContent = `Each press of Train takes ${t.steps} steps, its learning rate falling from ` +
    `${t.learning_rate} at the first step to 0 after the last, as ortnb.edge.train's does. Pressing Train again ` +
    `takes ${t.steps} more steps from the weights trained so far.`;
}

function useRows(rows, source, batches = null) {
  trainRows = rows;
  bundledBatches = batches;
  state.rows = rows.length;
  state.source = source;
}

function ids(text) {
  if (!idCache.has(text)) idCache.set(text, tokenizer.encode(text, bundle.model.seq_len));
  return idCache.get(text);
}

function feeds(rows) {
  const m = bundle.model;
  const { ids: inputIds, mask, width } = pad(rows.map((r) => ids(r.text)), m.pad_token_id,
    bundle.training.pad_to_multiple);
  const shape = [rows.length, width];
  const tensors = { input_ids: new ort.Tensor("int64", inputIds, shape),
    attention_mask: new ort.Tensor("int64", mask, shape) };
  const out = Object.fromEntries(m.inputs.map((name) => [name, tensors[name]]));
  out[m.label_input] = new ort.Tensor("int64", BigInt64Array.from(rows.map((r) => BigInt(r.label))), [rows.length]);
  return out;
}

async function train() {
  if (!trainRows.length) return refuse("There are no rows to train on: load a .jsonl, .json or .csv file with " +
    `text and label columns, or add examples with one of the labels ${bundle.model.labels.join(", ")}.`);
  state.error = null;
  if (state.round > 0) { // the schedule in the optimizer graph has run out: a new round from the current weights
    const weights = await session.getContiguousParameters(true);
    await session.release();
    session = await createSession();
    await session.loadParametersBuffer(new Uint8Array(weights.data.buffer, weights.data.byteOffset,
      weights.data.byteLength), true);
  }
  state.round += 1;
  roundStep = 0;
  state.status = "training";
  stopAsked = false;
  render();
  const t = bundle.training;
  try {
    for (let step = 1; step <= t.steps && !stopAsked; step++) {
      const chosen = bundledBatches && state.source === "bundled" ? bundledBatches[step - 1]
        : batchIndices(trainRows.length, t.batch_size, t.seed, step);
      const began = performance.now();
      const result = await session.runTrainStep(feeds(chosen.map((i) => trainRows[i])));
      await session.runOptimizerStep();
      await session.lazyResetGrad();
      const took = performance.now() - began;
      const loss = Number(result[session.trainingOutputNames[0]].data[0]);
      state.step += 1;
      roundStep += 1;
      state.losses.push(loss);
      state.timings.step_ms.push(took);
      if (state.timings.first_step_ms === null) state.timings.first_step_ms = performance.now();
      if (!Number.isFinite(loss)) throw new Error(`The loss became ${loss} at step ${state.step}: lower the ` +
        "learning rate (ortnb.edge.web_bundle(..., learning_rate=...)).");
      render();
      await new Promise((resolve) => setTimeout(resolve, 0)); // let Stop and the chart through
    }
    state.status = "ready";
  } catch (error) {
    return fail(`Training stopped: ${error.message ?? error}`);
  }
  render();
}

async function evaluate() {
  const rows = evalRows.length ? evalRows : trainRows;
  if (!rows.length) return refuse("There are no rows to evaluate: load rows first.");
  state.status = "evaluating";
  render();
  let total = 0, correct = 0;
  try {
    for (let start = 0; start < rows.length; start += EVAL_BATCH) {
      const chunk = rows.slice(start, start + EVAL_BATCH);
      const result = await session.runEvalStep(feeds(chunk));
      const [lossName, logitsName] = session.evalOutputNames;
      total += Number(result[lossName].data[0]) * chunk.length;
      const logits = result[logitsName].data, classes = bundle.model.labels.length;
      chunk.forEach((row, r) => {
        const scores = Array.from(logits.slice(r * classes, (r + 1) * classes));
        if (scores.indexOf(Math.max(...scores)) === row.label) correct += 1;
      });
    }
  } catch (error) {
    return fail(`Evaluation stopped: ${error.message ?? error}`);
  }
  state.evaluations.push({ step: state.step, eval_loss: total / rows.length, accuracy: correct / rows.length,
    samples: rows.length, on: evalRows.length ? "held-out rows" : "training rows" });
  state.status = "ready";
  render();
}

async function predict(text) {
  if (!text.trim()) return refuse("Type a text to classify first.");
  state.error = null;
  const result = await session.runEvalStep(feeds([{ text, label: 0 }])); // the label only feeds the loss
  const logits = Array.from(result[session.evalOutputNames[1]].data);
  const probabilities = softmax(logits);
  const best = probabilities.indexOf(Math.max(...probabilities));
  const prediction = { text, label: bundle.model.labels[best], logits, probabilities, step: state.step };
  state.predictions.push(prediction);
  $("prediction").textContent = `${prediction.label} (${bundle.model.labels.map((l, i) =>
    `${l} ${(100 * probabilities[i]).toFixed(1)}%`).join(", ")}), after ${state.step} steps`;
  render();
}

// The download: magic, header length, JSON header, float32 weights (read by ortnb/edge/browser_weights.py).
async function weightsFile() {
  const weights = await session.getContiguousParameters(true);
  const header = new TextEncoder().encode(JSON.stringify({
    format: "ortnb-browser-weights/1", identity: bundle.identity, parameters: weights.data.length,
    step: state.step, rounds: state.round, losses: state.losses, rows: trainRows.length,
    onnxruntime_web: bundle.onnxruntime_web, saved: new Date().toISOString(),
  }));
  const length = new Uint8Array(4);
  new DataView(length.buffer).setUint32(0, header.length, true);
  const values = new Float32Array(weights.data); // little-endian on every platform browsers run on
  return new Blob([new TextEncoder().encode("ORTNBW1\n"), length, header, values.buffer],
    { type: "application/octet-stream" });
}

async function download() {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(await weightsFile());
  link.download = `ortnb-weights-step-${state.step}.bin`;
  document.body.append(link);
  link.click();
  link.remove();
  state.downloads += 1;
}

async function loadFile(file) {
  try {
    const rows = checkRows(file.name, parseFile(file.name, await file.text()), bundle.model.labels);
    useRows(rows, file.name);
    state.error = null;
  } catch (error) {
    refuse(`${error.message} Nothing was loaded; the rows before stay.`);
  }
  render();
}

function addExample() {
  const text = $("example-text").value;
  if (!text.trim()) return refuse("Type the example's text first.");
  const rows = state.source === "typed" ? trainRows : [];
  useRows([...rows, { text, label: Number($("example-label").value) }], "typed");
  $("example-text").value = "";
  state.error = null;
  render();
}

$("train").addEventListener("click", () => train());
$("stop").addEventListener("click", () => { stopAsked = true; });
$("evaluate").addEventListener("click", () => evaluate());
$("predict").addEventListener("click", () => predict($("predict-text").value));
$("download").addEventListener("click", () => download());
$("data-file").addEventListener("change", (event) => event.target.files[0] && loadFile(event.target.files[0]));
$("add-example").addEventListener("click", addExample);
Object.assign(state, { train, evaluate, predict, weightsFile, loadFile }); // for scripts and tests

boot().catch((error) => fail(`The page did not load: ${error.message ?? error}`));
