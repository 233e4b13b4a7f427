// Rows, labels and batches, as ortnb.edge reads them in Python (ortnb/edge/batches.py): the same columns,
// the same label rules, the same padding. Pure functions: no DOM, no ONNX Runtime.
export const TEXT_COLUMNS = ["text", "sentence"];
export const LABEL_COLUMNS = ["label", "labels"];

// Records from a file's text: JSON Lines, a JSON array, or CSV with a header row.
export function parseFile(name, content) {
  const lower = name.toLowerCase();
  if (!content.replace(/^\uFEFF/, "").trim()) throw new Error(`${name} is empty: it needs at least one row`);
  if (lower.endsWith(".jsonl")) {
    return content.split(/\r?\n/).map((line, i) => [line, i + 1]).filter(([line]) => line.trim())
      .map(([line, number]) => {
        try { return { at: `line ${number}`, row: JSON.parse(line) }; }
        catch { throw new Error(`${name} line ${number} is not JSON`); }
      });
  }
  if (lower.endsWith(".json")) {
    let value;
    try { value = JSON.parse(content); } catch { throw new Error(`${name} is not JSON`); }
    if (!Array.isArray(value)) throw new Error(`${name} holds ${typeof value}, not a list of rows`);
    return value.map((row, i) => ({ at: `row ${i + 1}`, row }));
  }
  if (lower.endsWith(".csv")) return parseCsv(name, content.replace(/^\uFEFF/, ""));
  throw new Error(`${name}: give a .jsonl, .json or .csv file`);
}

function parseCsv(name, content) {
  const records = [];
  let field = "", record = [], quoted = false;
  for (let i = 0; i < content.length; i++) {
    const c = content[i];
    if (quoted) {
      if (c === '"' && content[i + 1] === '"') { field += '"'; i++; }
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") { record.push(field); field = ""; }
    else if (c === "\n" || c === "\r") {
      if (c === "\r" && content[i + 1] === "\n") i++;
      record.push(field); records.push(record); field = ""; record = [];
    } else field += c;
  }
  if (field || record.length) { record.push(field); records.push(record); }
  const [header, ...body] = records.filter((r) => r.some((value) => value.trim()));
  if (!header || !body.length) throw new Error(`${name} has no rows under its header`);
  return body.map((values, i) => ({
    at: `line ${i + 2}`, row: Object.fromEntries(header.map((column, j) => [column.trim(), values[j] ?? ""])),
  }));
}

// A label as the model's class id: its name, or a whole number below the number of labels.
export function labelId(value, labels) {
  if (typeof value === "string" && labels.includes(value)) return labels.indexOf(value);
  const number = typeof value === "string" && /^\s*-?\d+\s*$/.test(value) ? Number(value) : value;
  if (Number.isInteger(number) && number >= 0 && number < labels.length) return number;
  return null;
}

// [{text, label}] from parsed records, or an Error naming the first problem (what Python's checks say).
export function checkRows(name, records, labels) {
  if (!records.length) throw new Error(`${name} is empty: it needs at least one row`);
  const columns = Object.keys(records[0].row ?? {});
  const text = TEXT_COLUMNS.find((c) => columns.includes(c));
  const label = LABEL_COLUMNS.find((c) => columns.includes(c));
  if (!text || !label) {
    throw new Error(`${name} has columns ${columns.join(", ") || "(none)"}: each row needs a text column ` +
      `(${TEXT_COLUMNS.join(" or ")}) and a label column (${LABEL_COLUMNS.join(" or ")}) with one of the ` +
      `model's labels: ${labels.join(", ")}`);
  }
  return records.map(({ at, row }) => {
    if (typeof row[text] !== "string" || !row[text].trim()) {
      throw new Error(`${name} ${at} has no text in its '${text}' column`);
    }
    const id = labelId(row[label], labels);
    if (id === null) {
      throw new Error(`${name} ${at} has label ${JSON.stringify(row[label] ?? null)}; the model's labels are ` +
        `${labels.join(", ")} (or 0 to ${labels.length - 1})`);
    }
    return { text: row[text], label: id };
  });
}

// (input_ids, attention_mask) padded on the right to the longest row, rounded up to a multiple of `multiple`.
export function pad(idRows, padId, multiple) {
  const longest = Math.max(...idRows.map((r) => r.length));
  const width = Math.ceil(longest / multiple) * multiple;
  const ids = new BigInt64Array(idRows.length * width).fill(BigInt(padId));
  const mask = new BigInt64Array(idRows.length * width);
  idRows.forEach((row, r) => row.forEach((id, c) => { ids[r * width + c] = BigInt(id); mask[r * width + c] = 1n; }));
  return { ids, mask, width };
}

// The rows of step `step` (1-based) for rows a person gave in the page: a seeded shuffle per epoch. (Bundled rows
// use the order Python wrote into data.json, which is ortnb.edge.train's.)
export function batchIndices(count, batchSize, seed, step) {
  const picked = [];
  const start = (step - 1) * batchSize;
  while (picked.length < batchSize) {
    const position = start + picked.length;
    const epoch = Math.floor(position / count), offset = position % count;
    const order = permutation(count, seed * 1000003 + epoch);
    picked.push(...order.slice(offset, offset + batchSize - picked.length));
  }
  return picked;
}

function permutation(n, seed) {
  let s = seed >>> 0;
  const random = () => { // mulberry32: small and good enough to order rows
    s = (s + 0x6D2B79F5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}

export function softmax(values) {
  const top = Math.max(...values);
  const exps = values.map((v) => Math.exp(v - top));
  const total = exps.reduce((a, b) => a + b, 0);
  return exps.map((v) => v / total);
}
